#!/usr/bin/env python3
"""Per-file compile cost with and without the precompiled headers (docs/benchmarks.md, "Build time").

Reads build/compile_commands.json (a build configured with BATCHLAB_PCH=ON), compiles each chosen
file twice with the build's own command, ccache left out: as built (with -include cmake_pch.hxx)
and with the precompiled header taken out (every header parsed from source, as before the change).
Prints CPU seconds (user + sys of the compiler: steadier than wall time on a shared machine) per
file and the sum. The whole build's figure is ninja's own log (.ninja_log), not this.

  /usr/bin/python3 bench/build/compile_times.py build [--top 10] [FILE_SUBSTRING ...]
"""
import json, os, re, resource, shlex, subprocess, sys, tempfile


def cpu_seconds(cmd, cwd):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    args = sys.argv[1:]
    build = os.path.abspath(args.pop(0) if args else "build")
    top = 10
    if "--top" in args:
        i = args.index("--top")
        top = int(args[i + 1])
        del args[i:i + 2]
    entries = json.load(open(os.path.join(build, "compile_commands.json")))
    chosen = [e for e in entries if "cmake_pch.hxx" in e["command"]]
    if args:
        chosen = [e for e in chosen if any(a in e["file"] for a in args)]
    out = tempfile.mkdtemp()
    rows = []
    for e in chosen:
        words = shlex.split(e["command"])
        if os.path.basename(words[0]) == "ccache":
            words = words[1:]
        words = [w for w in words if w not in ("-MD",)]
        i = words.index("-o")
        words[i + 1] = os.path.join(out, "x.o")
        for flag in ("-MF", "-MT"):
            if flag in words:
                j = words.index(flag)
                del words[j:j + 2]
        with_pch = list(words)
        j = words.index("-include")
        without = words[:j] + words[j + 2:]
        without = [w for w in without if w != "-Winvalid-pch"]
        rel = os.path.relpath(e["file"], os.path.dirname(build))
        a = cpu_seconds(without, e["directory"])
        b = cpu_seconds(with_pch, e["directory"])
        rows.append((a, b, rel))
        print(f"{a:7.1f} {b:7.1f}  {rel}", flush=True)
    rows.sort(reverse=True)
    print(f"\nthe {min(top, len(rows))} costliest without the precompiled header (CPU s: without, with):")
    for a, b, rel in rows[:top]:
        print(f"  {a:6.1f} -> {b:5.1f}  {rel}")
    ta, tb = sum(r[0] for r in rows), sum(r[1] for r in rows)
    print(f"all {len(rows)} files: {ta:.0f} CPU s without, {tb:.0f} with ({tb / ta:.2f}x)")


if __name__ == "__main__":
    main()
