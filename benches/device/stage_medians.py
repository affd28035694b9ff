#!/usr/bin/env python3
"""Prints the median of each device-region stage over a TIMELINE's PARTITION_STATS lines (the
first partition's SRS placement left out). Usage: stage_medians.py TIMELINE [KEY ...]
Other scripts import `stage_values` for the values themselves."""
import statistics
import sys


def stage_values(path):
    """Each numeric stage of the PARTITION_STATS lines, as its list of values in order."""
    stats = {}
    for line in open(path):
        if "PARTITION_STATS" not in line or "srs_place_ms" in line:
            continue
        for kv in line.strip().split(",")[4:]:
            k, _, v = kv.partition("=")
            try:
                value = float(v)
            except ValueError:
                continue
            stats.setdefault(k, []).append(value)
    return stats


if __name__ == "__main__":
    stats = stage_values(sys.argv[1])
    keys = sys.argv[2:] or sorted(stats)
    print(", ".join(f"{k} {statistics.median(stats[k]):.1f}" for k in keys if k in stats))
