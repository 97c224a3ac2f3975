"""clients/python/batchlab/protocol.py equals base/run_protocol.h, the protocol's one home: every
C++ constant has a Python twin of the same value (kStopFile -> STOP_FILE, kLineResume ->
LINE_RESUME, kExitBadConfig -> EXIT_BAD_CONFIG, ...), the outcome table matches row for row,
the preempt signals match, and protocol.py declares nothing of those kinds that the header
lacks. The client spells those names only through protocol.py."""
import os
import re
import signal
import unittest

from client_test_support import CLIENT, REPO
from batchlab import protocol

HEADER = os.path.join(REPO, "base", "run_protocol.h")


def python_name(cpp):
    """kConfigFile -> CONFIG_FILE, kMetricGnsSqSmall -> METRIC_GNS_SQ_SMALL."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", cpp[1:]).upper()


def parse_header(text):
    """The header's constants: {name: value} (strings and ints), the outcome rows and the
    preempt signals."""
    # Comments may mention names and numbers.
    text = re.sub(r"//[^\n]*|/\*.*?\*/", "", text, flags=re.S)
    constants = {}
    for name, value in re.findall(r'inline constexpr const char\* (k\w+) = "([^"]*)";', text):
        constants[name] = value
    for name, value in re.findall(r"inline constexpr int (k\w+) = (-?\d+);", text):
        constants[name] = int(value)
    table = re.search(r"kOutcomes\[\] = \{(.*?)\};", text, re.S).group(1)
    outcomes = [(name, int(code), final == "true") for name, code, final in re.findall(
        r'\{Outcome::k\w+, "(\w+)", (\d+), (true|false)\}', table)]
    enum = re.search(r"enum class Outcome \{(.*?)\};", text, re.S).group(1)
    signals = re.search(r"kPreemptSignals\[\] = \{(.*?)\};", text, re.S).group(1)
    return constants, outcomes, re.findall(r"k\w+", enum), tuple(
        int(s) for s in re.findall(r"\d+", signals))


class ProtocolParityTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        with open(HEADER, encoding="utf-8") as f:
            cls.constants, cls.outcomes, cls.enum, cls.signals = parse_header(f.read())

    def test_the_parser_sees_the_header(self):
        # A parser that found nothing would pass every other test.
        self.assertGreaterEqual(len(self.constants), 25)
        for name in ("kVersion", "kConfigFile", "kPreemptFile", "kLineResume",
                     "kMetricGnsBBig", "kExitBadConfig"):
            self.assertIn(name, self.constants)
        self.assertEqual(len(self.outcomes), len(self.enum))
        self.assertEqual(len(self.signals), 2)

    def test_every_constant_has_an_equal_python_twin(self):
        for cpp, value in self.constants.items():
            with self.subTest(cpp):
                name = python_name(cpp)
                self.assertTrue(hasattr(protocol, name), f"protocol.py lacks {name} = {value!r}")
                self.assertEqual(getattr(protocol, name), value)
                self.assertIs(type(getattr(protocol, name)), type(value))

    def test_python_declares_nothing_the_header_lacks(self):
        ours = {n for n, v in vars(protocol).items()
                if n.isupper() and isinstance(v, (str, int)) and not isinstance(v, bool)}
        theirs = {python_name(c) for c in self.constants}
        self.assertEqual(ours - theirs, set())

    def test_the_outcome_table_matches_row_for_row(self):
        self.assertEqual(list(protocol.OUTCOMES), self.outcomes)
        self.assertEqual(protocol.OUTCOME_CODES, {n: c for n, c, _ in self.outcomes})
        self.assertEqual(protocol.OUTCOME_CODES["preempted"], 7)

    def test_the_preempt_signals_match_and_are_this_platforms(self):
        self.assertEqual(protocol.PREEMPT_SIGNALS, self.signals)
        self.assertEqual(protocol.PREEMPT_SIGNALS, (int(signal.SIGUSR2), int(signal.SIGTERM)))

    def test_the_checkpoint_file_name_is_the_runners(self):
        # runner/checkpoint/checkpoint_file.cc: fmt::format("step-{:08d}.rank-{}.ckpt", step, rank)
        self.assertEqual(protocol.checkpoint_file_name(40, 1), "step-00000040.rank-1.ckpt")

    def test_the_client_spells_protocol_names_only_through_protocol_py(self):
        # A quoted attempt-folder file name, or a line kind written as "kind": "...", outside
        # protocol.py is a second declaration that could drift.
        files = [v for c, v in self.constants.items() if c.endswith(("File", "Dir"))]
        self.assertIn("launch.json", files)
        kinds = [v for c, v in self.constants.items() if c.startswith("kLine")]
        patterns = [rf"""["']{re.escape(v)}["']""" for v in files] + [
            rf"""["']kind["']\s*:\s*["']{re.escape(v)}["']""" for v in kinds]
        self.assertEqual(len(patterns), 19)
        folder = os.path.join(CLIENT, "batchlab")
        checked = 0
        for file in sorted(os.listdir(folder)):
            if not file.endswith(".py") or file == "protocol.py":
                continue
            with open(os.path.join(folder, file), encoding="utf-8") as f:
                code = re.sub(r'"""(.*?)"""|#[^\n]*', "", f.read(), flags=re.S)
            checked += 1
            for pattern in patterns:
                found = re.search(pattern, code)
                self.assertIsNone(found, f"{file}: {found and found.group(0)} (use protocol.py)")
        self.assertGreaterEqual(checked, 7)

    def test_the_cxx_code_spells_protocol_names_only_through_the_header(self):
        # The same rule for C++: outside base/run_protocol.h, no string literal is an
        # attempt-folder or warm-worker file name (alone or after a "/"; a JSON key of the same
        # spelling, j["checkpoints"], is not one), no outcome's name is compared with or written
        # as an "outcome", and no line kind is compared with or written as a line's "kind".
        # Comments may name them; so may a longer message ("cannot write .../config.json").
        files = [v for c, v in self.constants.items() if c.endswith(("File", "Dir", "Prefix"))]
        outcomes = [name for name, _, _ in self.outcomes]
        kinds = [v for c, v in self.constants.items() if c.startswith("kLine")]
        patterns = [rf'(?<!\[)"/?{re.escape(v)}"(?!\])' for v in files] + [
            rf'(?:==|!=|"outcome"\]?\s*,)\s*"{re.escape(v)}"' for v in outcomes] + [
            rf'(?:"kind"\]?\s*(?:==|!=|,)|\bkind\w*\s*(?:==|!=))\s*"{re.escape(v)}"'
            for v in kinds]
        checked, found = 0, []
        for folder in ("analysis", "base", "cli", "orchestrator", "results", "runner"):
            for root, _, names in os.walk(os.path.join(REPO, folder)):
                for name in sorted(names):
                    path = os.path.join(root, name)
                    if not name.endswith((".cc", ".h")) or path == HEADER:
                        continue
                    with open(path, encoding="utf-8") as f:
                        code = re.sub(r"//[^\n]*|/\*.*?\*/", "", f.read(), flags=re.S)
                    checked += 1
                    for pattern in patterns:
                        found += [f"{os.path.relpath(path, REPO)}: {m.group(0)}"
                                  for m in re.finditer(pattern, code)]
        self.assertGreaterEqual(checked, 200)
        self.assertEqual(found, [], "use the names of base/run_protocol.h")


if __name__ == "__main__":
    unittest.main()
