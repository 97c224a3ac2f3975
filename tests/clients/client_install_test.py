"""`pip install --no-build-isolation ./clients/python` works offline (Debian's pip and setuptools)
and gives an importable `batchlab` that needs nothing beyond the standard library."""
import os
import shutil
import subprocess
import unittest

from client_test_support import CLIENT, PYTHON, TempDirTest, program_env


class InstallTest(TempDirTest):
    def test_pip_install_offline_then_import_without_torch(self):
        source = self.path("src")
        shutil.copytree(CLIENT, source)  # the build writes egg-info next to the sources
        target = self.path("site")
        env = program_env({"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
                           "PYTHONDONTWRITEBYTECODE": "1"})
        env.pop("PYTHONPATH", None)
        done = subprocess.run([PYTHON, "-m", "pip", "install", "--no-build-isolation",
                               "--no-deps", "--target", target, source],
                              capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        # -S: no site-packages, so torch cannot be found; the client must import anyway.
        probe = ("import sys; sys.path.insert(0, %r); import batchlab; "
                 "print(batchlab.__file__, 'torch' in sys.modules)" % target)
        done = subprocess.run([PYTHON, "-S", "-c", probe], capture_output=True, text=True,
                              env=env, timeout=60)
        self.assertEqual(done.returncode, 0, done.stderr)
        path, torch_loaded = done.stdout.split()
        self.assertTrue(path.startswith(target), path)
        self.assertEqual(torch_loaded, "False")


if __name__ == "__main__":
    unittest.main()
