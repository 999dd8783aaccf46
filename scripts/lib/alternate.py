#!/usr/bin/env python3
"""Times two shell commands in alternation, for a before/after comparison on a
shared machine: hyperfine runs all of one command, then all of the other, so a
change of load between the two halves shows up as a difference. Here each
round runs both (in the order A B, then B A, to cancel any order effect), and
the ratio is the median of the rounds' own ratios.

    alternate.py ROUNDS WARMUP COMMAND_A COMMAND_B
prints: median_a median_b paired_ratio (seconds, seconds, B/A); exits 1 when a
command fails."""
import statistics
import subprocess
import sys
import time


def once(command):
    start = time.perf_counter()
    result = subprocess.run(["sh", "-c", command], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"alternate.py: the command failed ({result.returncode}): {command}")
    return elapsed


def main():
    rounds, warmup, a, b = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], sys.argv[4]
    for _ in range(warmup):
        once(a)
        once(b)
    times_a, times_b = [], []
    for index in range(rounds):
        if index % 2 == 0:
            times_a.append(once(a))
            times_b.append(once(b))
        else:
            times_b.append(once(b))
            times_a.append(once(a))
    ratios = [tb / ta for ta, tb in zip(times_a, times_b)]
    print("%.6f %.6f %.4f" % (statistics.median(times_a), statistics.median(times_b), statistics.median(ratios)))


if __name__ == "__main__":
    main()
