#!/usr/bin/python3
"""Peer figure for bench/orchestrator: Optuna with SQLite storage running N trivial trials.

Prints one JSON line: {"trials": N, "seconds": wall, "per_trial_ms": ...}. Needs the Debian
package python3-optuna (run with /usr/bin/python3). Usage: optuna_baseline.py N DB_PATH
"""
import json
import sys
import time

import optuna


def main():
    n = int(sys.argv[1])
    db = sys.argv[2]
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    start = time.perf_counter()
    study = optuna.create_study(storage=f"sqlite:///{db}", study_name="bench",
                                sampler=optuna.samplers.RandomSampler(seed=1))
    study.optimize(lambda t: t.suggest_float("lr", 1e-3, 1.0, log=True), n_trials=n)
    seconds = time.perf_counter() - start
    print(json.dumps({"trials": n, "seconds": seconds, "per_trial_ms": 1000 * seconds / n}))


if __name__ == "__main__":
    main()
