#!/usr/bin/env python3
"""The driver of daemon_soak.sh (stdlib only): runs the load against a started `cuzk serve`,
polls its live page's /timeline as an open page would, samples the daemon's memory, evicts and
preloads parameter sets now and then, verifies a sample of the proofs, and ends with a table and
a verdict. daemon_soak.sh starts and stops the daemon; this file never does.

Load: per kind, CLIENTS (PoRep, synthetic) or POST_CLIENTS (each PoSt kind) workers, each running
`cuzk client prove ... --count BATCH --concurrency 1` again and again with ids of their own
(`<kind>-w<worker>-b<batch>-<i>`: a request with a completed job's id and content would join it
instead of proving), until N proofs were started or DURATION passed.

Samples (samples.csv): VmRSS, VmHWM and threads of the daemon from /proc/<pid>/status, and the
device memory nvidia-smi reports (the daemon's process, and the whole GPU), every SAMPLE_EVERY
seconds and at every k-th proof the daemon ends (counted from its log's `job ended` lines).
"""

import argparse
import csv
import json
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import urllib.request

EVENTS_KEPT = 10_000  # crates/cuzk-daemon/src/page/feed.rs: the /timeline ring's capacity
SAMPLE_FIELDS = ["t_s", "trigger", "proofs_done", "proofs_failed", "events_seen", "rss_kib", "hwm_kib",
                 "threads", "gpu_proc_mib", "gpu_used_mib"]


def now():
    return time.monotonic()


class Soak:
    def __init__(self, a):
        self.a = a
        self.t0 = now()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.children = set()
        self.started = 0  # proofs claimed by workers
        self.per_kind = {}  # kind -> {proofs, failed, total_ms_sum, batches}
        self.failures = []
        self.errors = []
        self.verify_queue = []
        self.verified = {"valid": 0, "invalid": 0, "unusable": 0}
        self.ended = {"Completed": 0, "Failed": 0, "Cancelled": 0}
        self.samples = []
        self.polls = []  # (t, since, next, missed, events, bytes, ms, reset)
        self.poll_errors = 0
        self.events_seen = 0
        self.evicts = []
        self.last_device_sample = -1.0
        self.ring_full_at = None  # seconds in, when the ring had been filled (events seen ≥ EVENTS_KEPT)
        os.makedirs(os.path.join(a.out), exist_ok=True)
        os.makedirs(os.path.join(a.work, "proofs"), exist_ok=True)
        self.live_file = open(os.path.join(a.out, "samples.csv"), "w", newline="")
        self.live_csv = csv.DictWriter(self.live_file, fieldnames=SAMPLE_FIELDS)
        self.live_csv.writeheader()

    # ---- helpers -------------------------------------------------------------------------
    def t(self):
        return now() - self.t0

    def run(self, args, timeout=None):
        """Runs a child (tracked, so a signal ends it too); returns (rc, stdout, stderr)."""
        p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        with self.lock:
            self.children.add(p)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            err += "\n(timed out)"
        finally:
            with self.lock:
                self.children.discard(p)
        return p.returncode, out, err

    def client(self, *args):
        return [self.a.cuzk, "--json", "client", "--address", self.a.address, *args]

    def http(self, path):
        url = f"http://127.0.0.1:{self.a.status_port}{path}"
        with urllib.request.urlopen(url, timeout=30) as r:
            return r.read()

    # ---- the load ------------------------------------------------------------------------
    def kind_args(self, kind):
        a = self.a
        if kind == "porep":
            return ["--c1", a.c1, "--miner-id", str(a.miner), "--sector-id", str(a.sector_id)]
        if kind == "winning":
            return ["--post", a.winning, "--miner-id", str(a.miner)]
        if kind == "window":
            return ["--post", a.window, "--miner-id", str(a.miner)]
        if kind == "synthetic":
            return ["--synthetic", str(a.synth_constraints), "--partitions", str(a.synth_partitions)]
        raise ValueError(kind)

    def partitions_of(self, kind):
        return self.a.synth_partitions if kind == "synthetic" else 1

    def claim(self):
        with self.lock:
            if self.stop.is_set() or self.started >= self.a.n:
                return 0
            if self.a.duration and self.t() >= self.a.duration:
                return 0
            b = min(self.a.batch, self.a.n - self.started)
            self.started += b
            return b

    def worker(self, kind, w):
        batch = 0
        while True:
            b = self.claim()
            if b == 0:
                return
            ident = f"{kind}-w{w}-b{batch}"
            proof = os.path.join(self.a.work, "proofs", f"{ident}.proof")
            rc, out, err = self.run(
                self.client("prove", *self.kind_args(kind), "--count", str(b), "--concurrency", "1",
                            "--id", ident, "--out", proof))
            summary = None
            for line in out.splitlines():
                if line.startswith("{"):
                    try:
                        summary = json.loads(line)
                    except ValueError:
                        pass
            with self.lock:
                k = self.per_kind.setdefault(kind, {"proofs": 0, "failed": 0, "total_ms": 0.0, "batches": 0})
                k["batches"] += 1
                if summary is None and self.stop.is_set():
                    k["interrupted"] = k.get("interrupted", 0) + b  # ended by a signal, not failed
                elif summary is None:
                    # The client itself failed (connection, a refused request): every request of
                    # the batch counts as failed.
                    k["failed"] += b
                    self.errors.append(f"{ident}: client exit {rc}: {err.strip()[-500:]}")
                else:
                    done = summary["proofs"] - summary["failed"]
                    k["proofs"] += done
                    k["failed"] += summary["failed"] + (b - summary["proofs"])
                    k["total_ms"] += summary["mean_total_ms"] * summary["proofs"]
                    k["reported"] = k.get("reported", 0) + summary["proofs"]
                    self.failures += [line for line in err.splitlines() if line.startswith("cuzk:")]
                    if done and kind != "synthetic" and batch % self.a.verify_every == 0:
                        self.verify_queue.append((kind, proof))
            batch += 1

    def verifier(self):
        """Verifies the queued proof files outside the daemon, one at a time, as they come."""
        while True:
            with self.lock:
                item = self.verify_queue.pop(0) if self.verify_queue else None
            if item is None:
                if self.stop.is_set():
                    return
                time.sleep(0.5)
                continue
            kind, proof = item
            a = self.a
            if kind == "porep":
                args = ["verify", "porep", "--c1", a.c1, "--proof", proof, "--params-dir", a.params,
                        "--prover-id", a.prover_id, "--sector-id", str(a.sector_id)]
            else:
                request = a.winning if kind == "winning" else a.window
                args = ["verify", f"{kind}-post", "--request", request, "--proof", proof,
                        "--params-dir", a.params]
            rc, out, err = self.run([a.cuzk, *args], timeout=600)
            verdict = {0: "valid", 1: "invalid"}.get(rc, "unusable")
            with self.lock:
                self.verified[verdict] += 1
                if verdict != "valid":
                    self.errors.append(f"verify {kind} {proof}: exit {rc}: {(out + err).strip()[-500:]}")

    # ---- the live page, as an open page polls it -----------------------------------------
    def poller(self):
        cursor = 0
        while not self.stop.is_set():
            t = self.t()
            begin = now()
            try:
                body = self.http(f"/timeline?since={cursor}")
                ms = (now() - begin) * 1e3
                tl = json.loads(body)
                events = len(tl["events"])
                with self.lock:
                    self.polls.append((round(t, 3), cursor, tl["next"], tl["missed"], events, len(body),
                                       round(ms, 2), tl["reset"]))
                    self.events_seen += events + tl["missed"]
                    if self.ring_full_at is None and self.events_seen >= EVENTS_KEPT:
                        self.ring_full_at = t
                cursor = tl["next"]
            except Exception as e:  # noqa: BLE001 - a failed poll is counted, the soak goes on
                with self.lock:
                    self.poll_errors += 1
                    self.errors.append(f"timeline poll at {t:.1f} s: {e}")
            self.stop.wait(max(0.0, self.a.poll_every - (now() - begin)))

    # ---- memory samples ------------------------------------------------------------------
    def proc_status(self):
        out = {}
        try:
            with open(f"/proc/{self.a.pid}/status") as f:
                for line in f:
                    key, _, value = line.partition(":")
                    if key in ("VmRSS", "VmHWM", "Threads"):
                        out[key] = int(value.split()[0])
        except OSError:
            pass
        return out

    def device_memory(self):
        """(the daemon's process, the whole GPU) in MiB, summed over GPUs; None without nvidia-smi."""
        if not self.a.nvidia_smi:
            return None, None
        proc = total = None
        try:
            r = subprocess.run([self.a.nvidia_smi, "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                               capture_output=True, text=True, timeout=20)
            total = sum(int(x) for x in r.stdout.split() if x.strip().isdigit())
            r = subprocess.run([self.a.nvidia_smi, "--query-compute-apps=pid,used_memory",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
            rows = [line.split(",") for line in r.stdout.splitlines() if "," in line]
            mine = [int(m) for p, m in rows if p.strip() == str(self.a.pid) and m.strip().isdigit()]
            proc = sum(mine) if mine else None  # in a container the pid may not be ours to see
        except (OSError, ValueError, subprocess.TimeoutExpired):
            pass
        return proc, total

    def sample(self, trigger):
        t = self.t()
        st = self.proc_status()
        proc = total = None
        if self.a.nvidia_smi and (trigger != "proofs" or t - self.last_device_sample >= 1.0):
            proc, total = self.device_memory()
            self.last_device_sample = t
        with self.lock:
            done = self.ended["Completed"]
            failed = self.ended["Failed"] + self.ended["Cancelled"]
            self.samples.append({"t_s": round(t, 2), "trigger": trigger, "proofs_done": done,
                                 "proofs_failed": failed, "events_seen": self.events_seen,
                                 "rss_kib": st.get("VmRSS"), "hwm_kib": st.get("VmHWM"),
                                 "threads": st.get("Threads"), "gpu_proc_mib": proc, "gpu_used_mib": total})
            # As they come too, so a run killed outright leaves its samples.
            if not self.live_file.closed:
                self.live_csv.writerow(self.samples[-1])
                self.live_file.flush()

    def sampler(self):
        """Tails the daemon's log for `job ended`, sampling at every k-th; and on a timer."""
        pattern = re.compile(r"job ended .*status=(\w+)")
        next_timed = 0.0
        partial = ""
        with open(self.a.log, errors="replace") as log:
            while not self.stop.is_set():
                line = log.readline()
                if line and not line.endswith("\n"):
                    partial += line  # the rest of the line is not written yet
                    line = ""
                elif line:
                    line, partial = partial + line, ""
                if line:
                    m = pattern.search(line)
                    if m:
                        with self.lock:
                            self.ended[m.group(1)] = self.ended.get(m.group(1), 0) + 1
                            k = sum(self.ended.values())
                        if k % self.a.sample_proofs == 0:
                            self.sample("proofs")
                    continue
                if self.t() >= next_timed:
                    self.sample("timer")
                    next_timed = self.t() + self.a.sample_every
                time.sleep(0.1)

    # ---- parameter sets: evict and preload ------------------------------------------------
    def evicter(self):
        while not self.stop.wait(self.a.evict_every):
            for circuit in self.a.sets:
                t = self.t()
                refused, evicted, freed, last = 0, False, 0, ""
                give_up = now() + self.a.evict_try
                while not self.stop.is_set():
                    rc, out, err = self.run(self.client("evict", circuit), timeout=120)
                    if rc == 0:
                        reply = json.loads(out.strip().splitlines()[-1])
                        evicted, freed = reply["was_loaded"], reply["freed_bytes"]
                        break
                    refused += 1
                    last = (err or out).strip().splitlines()[-1:] or [""]
                    last = last[0][-200:]
                    if now() >= give_up:
                        break
                    time.sleep(0.25)
                rc, out, err = self.run(self.client("preload", circuit), timeout=600)
                load_ms = json.loads(out.strip().splitlines()[-1])["load_time_ms"] if rc == 0 else None
                with self.lock:
                    self.evicts.append({"t_s": round(t, 2), "circuit": circuit, "evicted": evicted,
                                        "freed_bytes": freed, "refused": refused, "last_refusal": last,
                                        "preload_rc": rc, "load_ms": load_ms})
                    if rc != 0:
                        self.errors.append(f"preload {circuit} at {t:.1f} s: exit {rc}: {err.strip()[-300:]}")

    # ---- the run -------------------------------------------------------------------------
    def go(self):
        a = self.a
        background = [threading.Thread(target=self.sampler, daemon=True),
                      threading.Thread(target=self.verifier, daemon=True)]
        if a.poll_every > 0:
            background.append(threading.Thread(target=self.poller, daemon=True))
        if a.evict_every > 0:
            background.append(threading.Thread(target=self.evicter, daemon=True))
        self.sample("start")
        for th in background:
            th.start()
        workers = []
        for kind in a.kinds:
            clients = a.post_clients if kind in ("winning", "window") else a.clients
            for w in range(clients):
                workers.append(threading.Thread(target=self.worker, args=(kind, w), daemon=True))
        self.load_start = self.t()
        for th in workers:
            th.start()
        last_report = 0.0
        while any(th.is_alive() for th in workers):
            time.sleep(0.5)
            if self.t() - last_report >= a.report_every:
                last_report = self.t()
                with self.lock:
                    done, failed = self.ended["Completed"], self.ended["Failed"] + self.ended["Cancelled"]
                    rss = self.samples[-1]["rss_kib"] if self.samples else None
                print(f"[{self.t():7.1f} s] proofs {done} done, {failed} failed; RSS {rss} KiB; "
                      f"timeline polls {len(self.polls)}, events {self.events_seen}", flush=True)
        self.load_end = self.t()
        # Let the log catch up with the last proofs, then the end sample.
        expected = sum(k["proofs"] + k["failed"] for k in self.per_kind.values())
        deadline = now() + 10
        while now() < deadline and sum(self.ended.values()) < expected:
            time.sleep(0.2)
        self.sample("end")
        # Drain the verification queue, then stop the background threads.
        while True:
            with self.lock:
                if not self.verify_queue:
                    break
            time.sleep(0.5)
        self.stop.set()
        for th in background:
            th.join(timeout=700)
        try:
            self.final_status = json.loads(self.http("/status"))
        except Exception as e:  # noqa: BLE001
            self.final_status = None
            self.errors.append(f"/status at the end: {e}")

    def kill_children(self):
        with self.lock:
            children = list(self.children)
        for p in children:
            try:
                p.terminate()
            except OSError:
                pass

    # ---- the report ----------------------------------------------------------------------
    def write_csv(self):
        a = self.a
        self.live_file.close()  # samples.csv, written as the samples came
        with open(os.path.join(a.out, "timeline_polls.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["t_s", "since", "next", "missed", "events", "bytes", "ms", "reset"])
            w.writerows(self.polls)
        if self.evicts:
            with open(os.path.join(a.out, "evictions.csv"), "w", newline="") as f:
                w = csv.DictWriter(f, fieldnames=list(self.evicts[0].keys()))
                w.writeheader()
                w.writerows(self.evicts)
        with open(os.path.join(a.out, "errors.log"), "w") as f:
            f.write("\n".join(self.errors + self.failures) + "\n")

    def report(self):
        a = self.a
        self.write_csv()
        done = sum(k["proofs"] for k in self.per_kind.values())
        failed = sum(k["failed"] for k in self.per_kind.values())
        partitions = sum(k["proofs"] * self.partitions_of(kind) for kind, k in self.per_kind.items())
        wall = self.load_end - self.load_start
        # Warm-up: the later of the first 10% of the proofs and the first WARMUP seconds of load;
        # and, when the /timeline ring filled within the first half of the load, that too: the
        # ring (EVENTS_KEPT records, a few MB) grows by design until it is full, then stays.
        warm_proofs = max(1, int(0.1 * done))
        samples = [s for s in self.samples if s["rss_kib"]]

        def first(pred):
            return next((s for s in samples if pred(s)), None)

        early = first(lambda s: s["proofs_done"] >= warm_proofs and s["t_s"] >= self.load_start + a.warmup)
        ring = first(lambda s: s["events_seen"] >= EVENTS_KEPT) if self.ring_full_at is not None else None
        warm = early
        ring_in_warmup = bool(a.warm_after_ring and early and ring and ring["t_s"] > early["t_s"]
                              and ring["t_s"] - self.load_start <= 0.5 * wall)
        if ring_in_warmup:
            warm = ring
        end = samples[-1] if samples else None

        def pct(x, y):
            return (y / x - 1) * 100 if x and y else float("nan")

        W = 44
        lines = []
        p = lines.append
        p("")
        p(f"== soak: {'+'.join(a.kinds)}, backend {a.backend}, {a.clients} client(s)"
          + (f", {a.post_clients} per PoSt kind" if any(k in ('winning', 'window') for k in a.kinds) else "")
          + (f", synthetic {a.synth_constraints} constraints x {a.synth_partitions} partitions" if "synthetic" in a.kinds else "")
          + (f", evict+preload every {a.evict_every:g} s" if a.evict_every else ""))
        p(f"{'what':{W}} | value")
        p(f"{'-' * W}-|------")
        interrupted = sum(k.get("interrupted", 0) for k in self.per_kind.values())
        p(f"{'proofs done / failed':{W}} | {done} / {failed}"
          + (f" ({interrupted} in flight when interrupted)" if interrupted else ""))
        for kind, k in sorted(self.per_kind.items()):
            n = k.get("reported", 0)
            mean = k["total_ms"] / n if n else float("nan")  # over the requests the client reported
            p(f"{'  ' + kind + ': done / failed, mean total ms':{W}} | {k['proofs']} / {k['failed']}, {mean:.0f}")
        status = self.final_status or {}
        p(f"{'daemon counters: completed / failed':{W}} | {status.get('total_proofs_completed', '?')} / {status.get('total_proofs_failed', '?')}")
        p(f"{'partitions proven':{W}} | {partitions} (ring: EVENTS_KEPT {EVENTS_KEPT}, ~{EVENTS_KEPT // 4} partitions)")
        p(f"{'wall time (load)':{W}} | {wall:.1f} s")
        p(f"{'proofs/s':{W}} | {done / wall if wall else float('nan'):.3f}")
        ms = [x[6] for x in self.polls]
        if ms:
            q = statistics.quantiles(ms, n=100, method="inclusive") if len(ms) >= 2 else [ms[0]] * 99
            p(f"{'/timeline polls: n, errors, missed records':{W}} | {len(self.polls)}, {self.poll_errors}, {sum(x[3] for x in self.polls)}")
            p(f"{'/timeline poll ms: median / p99 / max':{W}} | {statistics.median(ms):.1f} / {q[98]:.1f} / {max(ms):.1f}")
            p(f"{'/timeline bytes per poll: median / max':{W}} | {statistics.median(x[5] for x in self.polls):.0f} / {max(x[5] for x in self.polls)}")
            p(f"{'records seen (ring filled at)':{W}} | {self.events_seen}"
              + (f" ({self.ring_full_at - self.load_start:.0f} s into the load)" if self.ring_full_at is not None else " (never filled)"))
        if "synthetic" in a.kinds and len(a.kinds) == 1:
            p(f"{'verified outside the daemon':{W}} | none (synthetic: the engine verifies every partition)")
        else:
            v = self.verified
            p(f"{'verified outside: valid / invalid / unusable':{W}} | {v['valid']} / {v['invalid']} / {v['unusable']}"
              " (and every proof by the daemon before it returned it)")
        if self.evicts:
            ev = sum(1 for e in self.evicts if e["evicted"])
            refused = sum(1 for e in self.evicts if not e["evicted"])
            loads = [e["load_ms"] for e in self.evicts if e["load_ms"]]
            p(f"{'evict+preload: evicted / refused (in use)':{W}} | {ev} / {refused}"
              + (f"; preload ms median {int(statistics.median(loads))}" if loads else ""))
        verdict_ok = True
        if warm and end:
            if done:
                quarter = [first(lambda s, f=f: s["proofs_done"] >= f * done / 4) for f in (1, 2, 3)]
                p(f"{'RSS MiB at 25 / 50 / 75% of proofs, end':{W}} | "
                  + " / ".join(f"{s['rss_kib'] / 1024:.1f}" if s else "?" for s in quarter)
                  + f", {end['rss_kib'] / 1024:.1f}")
            if early:
                p(f"{'RSS MiB after 10% and ' + format(a.warmup, 'g') + ' s (' + format(early['t_s'] - self.load_start, '.0f') + ' s)':{W}} | "
                  f"{early['rss_kib'] / 1024:.1f} -> end {end['rss_kib'] / 1024:.1f} ({pct(early['rss_kib'], end['rss_kib']):+.1f}%)")
            if ring:
                p(f"{'RSS MiB when the ring filled (' + format(ring['t_s'] - self.load_start, '.0f') + ' s)':{W}} | "
                  f"{ring['rss_kib'] / 1024:.1f} -> end {end['rss_kib'] / 1024:.1f} ({pct(ring['rss_kib'], end['rss_kib']):+.1f}%)")
            after = [s for s in samples if s["t_s"] >= warm["t_s"]]
            mx = max(s["rss_kib"] for s in after)
            growth = pct(warm["rss_kib"], end["rss_kib"])
            base = "ring filled" if ring_in_warmup else "10% / warm-up"
            p(f"{'warm-up baseline':{W}} | {base}: {warm['t_s'] - self.load_start:.0f} s, {warm['proofs_done']} proofs")
            p(f"{'RSS MiB: warm / end / max after warm':{W}} | {warm['rss_kib'] / 1024:.1f} / {end['rss_kib'] / 1024:.1f} / {mx / 1024:.1f}")
            p(f"{'RSS change warm->end, warm->max':{W}} | {growth:+.1f}%, {pct(warm['rss_kib'], mx):+.1f}%")
            p(f"{'threads warm / end; VmHWM end MiB':{W}} | {warm['threads']} / {end['threads']}; {end['hwm_kib'] / 1024:.1f}")
            for key, label in (("gpu_proc_mib", "device MiB (daemon)"), ("gpu_used_mib", "device MiB (whole GPU)")):
                dev = [s for s in after if s[key] is not None]
                if dev:
                    dmax = max(s[key] for s in dev)
                    p(f"{label + ': warm / end / max':{W}} | {dev[0][key]} / {dev[-1][key]} / {dmax} "
                      f"({pct(dev[0][key], dev[-1][key]):+.1f}%, max {pct(dev[0][key], dmax):+.1f}%)")
            flat = growth <= a.rss_tolerance
            p(f"RSS flat within {a.rss_tolerance:g}%: {'yes' if flat else 'no'}")
            verdict_ok &= flat
        else:
            p("RSS flat within {:g}%: no (no warm-up sample: too few proofs or too short)".format(a.rss_tolerance))
            verdict_ok = False
        if self.errors:
            p(f"errors ({len(self.errors)}, all in errors.log): {self.errors[0][:300]}")
        if self.failures:
            p(f"failures ({len(self.failures)}): {self.failures[0][:300]}")
        text = "\n".join(lines)
        print(text, flush=True)
        with open(os.path.join(a.out, "summary.txt"), "w") as f:
            f.write(text + "\n")
        summary = {"done": done, "failed": failed, "partitions": partitions, "wall_s": wall,
                   "per_kind": self.per_kind, "verified": self.verified, "warm": warm, "end": end,
                   "ring_full_at_s": self.ring_full_at, "events_seen": self.events_seen,
                   "polls": len(self.polls), "poll_errors": self.poll_errors, "evicts": self.evicts,
                   "errors": len(self.errors)}
        with open(os.path.join(a.out, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        bad = failed > 0 or self.verified["invalid"] > 0 or self.verified["unusable"] > 0 or done == 0
        return 0 if verdict_ok and not bad else 1


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cuzk", required=True)
    ap.add_argument("--address", required=True)
    ap.add_argument("--status-port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True, help="the daemon's pid")
    ap.add_argument("--log", required=True, help="the daemon's log (stdout and stderr)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--backend", default="auto")
    ap.add_argument("--kinds", default="porep")
    ap.add_argument("--n", type=int, default=5000)
    ap.add_argument("--duration", type=float, default=0)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--post-clients", type=int, default=1)
    ap.add_argument("--batch", type=int, default=25)
    ap.add_argument("--sets", default="", help="parameter sets to evict and preload, comma-separated")
    ap.add_argument("--evict-every", type=float, default=0)
    ap.add_argument("--evict-try", type=float, default=10, help="seconds to retry an evict refused (set in use)")
    ap.add_argument("--poll-every", type=float, default=2, help="seconds between polls; 0: the page closed")
    ap.add_argument("--sample-every", type=float, default=5)
    ap.add_argument("--sample-proofs", type=int, default=0, help="sample at every k-th proof (0: N/100)")
    ap.add_argument("--report-every", type=float, default=60)
    ap.add_argument("--warmup", type=float, default=60, help="seconds of load before the warm-up sample at least")
    ap.add_argument("--rss-tolerance", type=float, default=10)
    ap.add_argument("--warm-after-ring", type=int, default=1,
                    help="1: when the /timeline ring fills in the first half of the load, the baseline waits for it")
    ap.add_argument("--verify-every", type=int, default=10, help="verify each worker's every k-th batch's first proof")
    ap.add_argument("--c1")
    ap.add_argument("--winning")
    ap.add_argument("--window")
    ap.add_argument("--params")
    ap.add_argument("--miner", type=int, default=1000)
    ap.add_argument("--sector-id", type=int, default=0)
    ap.add_argument("--prover-id", default="")
    a = ap.parse_args()
    a.kinds = [k for k in a.kinds.split(",") if k]
    a.sets = [s for s in a.sets.split(",") if s]
    a.sample_proofs = a.sample_proofs or max(1, a.n // 100)
    a.nvidia_smi = shutil.which("nvidia-smi")
    a.synth_constraints = int(os.environ.get("SYNTH_CONSTRAINTS", "1024"))
    a.synth_partitions = int(os.environ.get("SYNTH_PARTITIONS", "2"))
    soak = Soak(a)

    def on_signal(signum, _frame):
        # Once: a second signal (the script's trap after an outside one) must not cut the report.
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        soak.stop.set()
        soak.kill_children()
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    interrupted = None
    try:
        soak.go()
    except SystemExit as e:
        interrupted = e.code
        print(f"soak: interrupted (exit {e.code}); the figures so far:", flush=True)
        soak.sample("end")
    finally:
        soak.stop.set()
        soak.kill_children()
    if not hasattr(soak, "load_start"):
        sys.exit(interrupted or 1)
    if not hasattr(soak, "load_end"):
        soak.load_end = soak.t()
    if not hasattr(soak, "final_status"):
        soak.final_status = None
    rc = soak.report()
    sys.exit(interrupted or rc)


if __name__ == "__main__":
    main()
