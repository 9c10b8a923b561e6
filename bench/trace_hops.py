#!/usr/bin/env python3
"""Reads the timelines a traced run wrote (TASKWIRE_TRACE=DIR, runtime/trace.hpp) and shows
where a dependent edge's time goes.

  TASKWIRE_TRACE=/tmp/tr mpiexec.mpich -n 4 taskwire-taskbench --backend mpi -steps 300 ...
  bench/trace_hops.py /tmp/tr                      # per rank: work, gaps, sleeps, messages
  bench/trace_hops.py /tmp/tr --timeline 900 910   # every event between two task starts
  bench/trace_hops.py /tmp/tr --gap 2 5            # rank 2's 6th wait between tasks longer
                                                   # than --min-us, every rank's events in it

Ranks are named as `mpiexec.mpich -n K` numbers them (trace-<rank>-<pid>.txt); in the MPI
launches rank 0 is the scheduler, rank 1 the client, the others workers.
"""
import argparse
import glob
import os
import re
import statistics
import sys

OPS = {1: "update_graph", 2: "release_keys", 20: "key_in_memory", 40: "register_worker",
       41: "heartbeat", 42: "task_finished", 43: "task_erred", 44: "missing_data",
       46: "threads_busy", 47: "steal_response", 60: "compute_task", 61: "free_keys",
       66: "free_processing", 67: "steal_request", 80: "get_data", 81: "data_reply",
       82: "update_data", 83: "update_data_reply", 5: "shutdown", 24: "shutting_down",
       45: "worker_closing", 62: "close_worker"}


# A wait between tasks longer than this is one the summary counts apart, and --gap's default.
LONG_WAIT_US = 20.0


def load(directory):
    events = []
    for path in glob.glob(os.path.join(directory, "trace-*.txt")):
        m = re.search(r"trace-([^-]+)-(\d+)\.txt$", path)
        rank = m.group(1) if m else path
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split(" ", 4)
                if len(parts) < 4:
                    continue
                text = parts[4] if len(parts) > 4 else ""
                events.append((int(parts[0]), rank, int(parts[1]), parts[2], int(parts[3]), text))
    events.sort()
    return events


def us(ns):
    return ns / 1000.0


def summary(events):
    ranks = sorted({e[1] for e in events})
    for rank in ranks:
        mine = [e for e in events if e[1] == rank]
        span = mine[-1][0] - mine[0][0] if len(mine) > 1 else 0
        starts = [e[0] for e in mine if e[3] == "task_start"]
        ends = [e[0] for e in mine if e[3] == "task_end"]
        busy = sum(b - a for a, b in zip(starts, ends))
        gaps = [s - e for e, s in zip(ends, starts[1:])]
        long_gaps = [g for g in gaps if us(g) > LONG_WAIT_US]
        received, queued = {}, {}
        for e in mine:
            if e[3] in ("received", "queued"):
                table = received if e[3] == "received" else queued
                name = OPS.get(e[4], str(e[4]))
                table[name] = table.get(name, 0) + 1
        sleeps = sum(1 for e in mine if e[3] == "sleep")
        print(f"rank {rank}: {len(mine)} events over {us(span)/1000:.1f} ms; sleeps {sleeps}")
        if starts:
            print(f"  tasks {len(starts)}, running {100.0 * busy / max(span, 1):.0f} % of the span; "
                  f"gap between a task's end and the next start: median "
                  f"{us(statistics.median(gaps)) if gaps else 0:.1f} us, 90th "
                  f"{us(sorted(gaps)[int(0.9 * len(gaps))]) if gaps else 0:.1f} us")
            print(f"  waiting between tasks {us(sum(gaps)) / 1000:.1f} ms in all, "
                  f"{us(sum(long_gaps)) / 1000:.1f} ms of it in {len(long_gaps)} gaps over "
                  f"{LONG_WAIT_US:g} us")
        if received:
            print("  received: " + ", ".join(f"{k} {v}" for k, v in sorted(received.items())))
        if queued:
            print("  sent:     " + ", ".join(f"{k} {v}" for k, v in sorted(queued.items())))


def timeline(events, first, last):
    starts = [e for e in events if e[3] == "task_start"]
    if last >= len(starts):
        sys.exit(f"trace_hops: only {len(starts)} task starts in this trace")
    t0, t1 = starts[first][0], starts[last][0]
    previous = t0
    for ns, rank, tid, what, op, text in events:
        if t0 <= ns <= t1:
            name = OPS.get(op, str(op)) if what in ("queued", "sent", "received") else ""
            print(f"{us(ns - t0):9.1f} +{us(ns - previous):7.1f}  rank {rank:2s} {tid:7d} "
                  f"{what:10s} {name:15s} {text}")
            previous = ns


def gap(events, rank, which, min_us, before_us):
    """Every rank's events from before_us ahead of `rank`'s task end that opens its
    which-th wait longer than min_us, to the task start that closes it: what the other ranks
    did (or did not do) while this one waited."""
    last_end, seen = None, 0
    for ns, r, tid, what, op, text in events:
        if r != rank:
            continue
        if what == "task_end":
            last_end = ns
        elif what == "task_start" and last_end is not None and us(ns - last_end) > min_us:
            if seen == which:
                print(f"rank {rank}: a wait of {us(ns - last_end):.1f} us (0 = the task end)")
                for e in events:
                    if last_end - before_us * 1000 <= e[0] <= ns:
                        name = OPS.get(e[4], str(e[4])) if e[3] in ("queued", "sent", "received") else ""
                        print(f"{us(e[0] - last_end):9.1f}  rank {e[1]:2s} {e[3]:10s} {name:15s} {e[5]}")
                return
            seen += 1
    sys.exit(f"trace_hops: rank {rank} has {seen} waits longer than {min_us} us")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory")
    parser.add_argument("--timeline", nargs=2, type=int, metavar=("FIRST", "LAST"),
                        help="every event between the FIRST and LAST task start (0-based)")
    parser.add_argument("--gap", nargs=2, metavar=("RANK", "N"),
                        help="rank RANK's N-th (0-based) wait between tasks longer than "
                             "--min-us, with every rank's events during it")
    parser.add_argument("--min-us", type=float, default=LONG_WAIT_US,
                        help=f"--gap: waits longer than this count (default {LONG_WAIT_US:g})")
    parser.add_argument("--before-us", type=float, default=100.0,
                        help="--gap: also show this much before the wait (default 100)")
    args = parser.parse_args()
    events = load(args.directory)
    if not events:
        sys.exit(f"trace_hops: no trace-*.txt in {args.directory} (was TASKWIRE_TRACE set?)")
    if args.timeline:
        timeline(events, *args.timeline)
    elif args.gap:
        gap(events, args.gap[0], int(args.gap[1]), args.min_us, args.before_us)
    else:
        summary(events)


if __name__ == "__main__":
    main()
