#!/usr/bin/env python3
"""A cuzk.v1 client from another gRPC stack (Python grpcio), talking to `cuzk serve` as Curio does.

Stubs are generated at run time from crates/cuzk-daemon/proto/cuzk/v1/proving.proto (grpc_tools),
so this client knows the API only through the .proto file. It connects without credentials with
256 MiB send and receive limits and the `:authority` grpc-go sends on a unix socket
("localhost"; see --authority), sends PoRep C2 `Prove`s formed as Curio forms them, writes the
proofs, then calls `GetStatus` (with Curio's 5 s deadline). Each rpc or step prints one JSON
line on stdout:

    {"rpc": "Prove", "status": "COMPLETED", "proof_bytes": 192, "total_ms": ..., "wall_s": ...}
    {"rpc": "GetStatus", "total_proofs_completed": "1", ...}

--scenario prove (the default): one Prove of --c1.
--scenario retries: what Curio's task retries do to one request id (`porep-<miner>-<sector>`,
the same in every retry), each step a JSON line with "step":
  failed      --tampered-c1 under the id: FAILED;
  retried     the good --c1 under the failed id from 3 callers at once, and a 4th once it runs:
              all COMPLETED with one proof (the completed counter grows by one);
  superseded  the id of --other-sector-number, first with --c1 (sector --sector-number), then,
              while that runs, with --other-c1: both callers get the second's proof (one
              cancelled attempt).
The proofs go to --proof-out (--c1's) and --other-proof-out (--other-c1's).

Exit status: 0 when every proof came back COMPLETED and non-empty (Curio's test) and, for
retries, every step went as described; 1 otherwise; 2 for unusable arguments or stubs that
cannot be generated.

Needs: grpcio, grpcio-tools, protobuf (see .ci/run for the pinned versions).
"""

import argparse
import base64
import importlib.resources
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import grpc
from grpc_tools import protoc
from google.protobuf.json_format import MessageToDict

# Curio's client: grpc.MaxCallSendMsgSize / MaxCallRecvMsgSize of 256 MiB.
MAX_MESSAGE_BYTES = 256 << 20

DEFAULT_PROTO_ROOT = os.path.normpath(
    os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "cuzk-daemon", "proto")
)


def generate_stubs(proto_root, out_dir):
    """Compiles cuzk/v1/proving.proto under proto_root into out_dir and imports it."""
    proto = os.path.join(proto_root, "cuzk", "v1", "proving.proto")
    if not os.path.isfile(proto):
        raise SystemExit(f"curio_client: no {proto}")
    well_known = str(importlib.resources.files("grpc_tools") / "_proto")
    rc = protoc.main(
        [
            "grpc_tools.protoc",
            f"-I{proto_root}",
            f"-I{well_known}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            proto,
        ]
    )
    if rc != 0:
        raise SystemExit(f"curio_client: protoc failed on {proto} (exit {rc})")
    sys.path.insert(0, out_dir)
    from cuzk.v1 import proving_pb2, proving_pb2_grpc  # noqa: E402 (generated just now)

    return proving_pb2, proving_pb2_grpc


def message_dict(message):
    """Every field, defaults included, under its .proto name (uint64 as strings, per proto3 JSON)."""
    try:
        return MessageToDict(
            message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True
        )
    except TypeError:  # protobuf < 5.26
        return MessageToDict(
            message, preserving_proto_field_name=True, including_default_value_fields=True
        )


def porep_request(pb, args, c1_path=None, sector_number=None, request_id=None):
    """The SubmitProofRequest Curio's PoRep task sends (--c1 and --sector-number by default)."""
    c1_path = c1_path or args.c1
    sector_number = args.sector_number if sector_number is None else sector_number
    with open(c1_path, "rb") as f:
        c1 = f.read()
    # Curio: json.Marshal of {SectorNum int64; Phase1Out []byte; SectorSize uint64}; Go encodes
    # []byte as standard base64.
    vanilla = json.dumps(
        {
            "SectorNum": sector_number,
            "Phase1Out": base64.b64encode(c1).decode("ascii"),
            "SectorSize": args.sector_size,
        }
    ).encode()
    return pb.SubmitProofRequest(
        request_id=request_id or f"porep-{args.miner_id}-{sector_number}",
        proof_kind=pb.POREP_SEAL_COMMIT,
        sector_size=args.sector_size,
        registered_proof=args.registered_proof,
        priority=pb.NORMAL,
        vanilla_proof=vanilla,
        sector_number=sector_number,
        miner_id=args.miner_id,
    )


def emit(record):
    print(json.dumps(record), flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", required=True, help="unix:///PATH (Curio's default form) or HOST:PORT")
    parser.add_argument("--c1", required=True, help="the C1 output JSON file (the FFI's form)")
    parser.add_argument("--miner-id", type=int, required=True)
    parser.add_argument("--sector-number", type=int, required=True)
    parser.add_argument("--sector-size", type=int, default=2048)
    parser.add_argument("--registered-proof", type=int, default=5, help="RegisteredSealProof (5: StackedDrg2KiBV1_1)")
    parser.add_argument("--proof-out", required=True, help="where the proof bytes go")
    parser.add_argument("--scenario", choices=["prove", "retries"], default="prove")
    parser.add_argument("--tampered-c1", help="retries: a C1 output whose proof fails")
    parser.add_argument("--other-c1", help="retries: another sector's C1 output")
    parser.add_argument("--other-sector-number", type=int)
    parser.add_argument("--other-proof-out", help="retries: where --other-c1's proof goes")
    parser.add_argument("--timeout", type=float, default=1800.0, help="Prove's deadline in seconds (Curio: 30 min)")
    parser.add_argument(
        "--authority",
        default="localhost",
        help="the :authority header; grpc-go (Curio) sends \"localhost\" on unix sockets, while "
        "grpc-core (grpcio >= 1.57) sends the percent-encoded socket path, which the daemon's "
        "HTTP/2 layer (hyper's h2) rejects with RST_STREAM PROTOCOL_ERROR; \"\" keeps "
        "grpc-core's own",
    )
    parser.add_argument("--proto-root", default=DEFAULT_PROTO_ROOT)
    args = parser.parse_args()
    retries = [args.tampered_c1, args.other_c1, args.other_sector_number, args.other_proof_out]
    if args.scenario == "retries" and any(a is None for a in retries):
        parser.error("--scenario retries needs --tampered-c1, --other-c1, --other-sector-number "
                     "and --other-proof-out")

    stubs = tempfile.mkdtemp(prefix="cuzk-stubs-")
    try:
        pb, pb_grpc = generate_stubs(args.proto_root, stubs)
        options = [
            ("grpc.max_send_message_length", MAX_MESSAGE_BYTES),
            ("grpc.max_receive_message_length", MAX_MESSAGE_BYTES),
        ]
        if args.authority:
            options.append(("grpc.default_authority", args.authority))
        with grpc.insecure_channel(args.target, options=options) as channel:
            stub = pb_grpc.ProvingEngineStub(channel)
            if args.scenario == "retries":
                ok = retries_scenario(pb, stub, args)
            else:
                ok = prove(pb, stub, args)
            status(pb, stub)
        return 0 if ok else 1
    finally:
        shutil.rmtree(stubs, ignore_errors=True)


def call_prove(pb, stub, args, submit):
    """One Prove: its JSON record (printed) and the proof bytes (None unless COMPLETED)."""
    start = time.monotonic()
    try:
        response = stub.Prove(pb.ProveRequest(submit=submit), timeout=args.timeout)
    except grpc.RpcError as e:
        record = {"rpc": "Prove", "job_id": submit.request_id, "grpc_error": e.code().name,
                  "details": e.details(), "wall_s": round(time.monotonic() - start, 3)}
        emit(record)
        return record, None
    result = response.result
    status_name = pb.AwaitProofResponse.Status.Name(result.status)
    record = {
        "rpc": "Prove",
        "job_id": result.job_id,
        "status": status_name,
        "proof_bytes": len(result.proof),
        "error_message": result.error_message,
        "queue_wait_ms": result.queue_wait_ms,
        "srs_load_ms": result.srs_load_ms,
        "synthesis_ms": result.synthesis_ms,
        "gpu_compute_ms": result.gpu_compute_ms,
        "total_ms": result.total_ms,
        "wall_s": round(time.monotonic() - start, 3),
    }
    emit(record)
    ok = status_name == "COMPLETED" and len(result.proof) > 0
    return record, (result.proof if ok else None)


def write_atomically(path, data):
    partial = path + ".partial"
    with open(partial, "wb") as f:
        f.write(data)
    os.replace(partial, path)


def prove(pb, stub, args):
    _, proof = call_prove(pb, stub, args, porep_request(pb, args))
    if proof is not None:
        write_atomically(args.proof_out, proof)
    return proof is not None


def counter(pb, stub, name):
    """A counter's value in GetMetrics' Prometheus text (its line `name value`)."""
    text = stub.GetMetrics(pb.GetMetricsRequest(), timeout=5.0).prometheus_text
    for line in text.splitlines():
        key, _, value = line.rpartition(" ")
        if key == name:
            return int(float(value))
    raise SystemExit(f"curio_client: no {name} in the metrics")


def in_progress(pb, stub):
    """PoRep jobs in progress, by GetStatus."""
    queues = stub.GetStatus(pb.GetStatusRequest(), timeout=5.0).queues
    return sum(q.in_progress for q in queues if q.proof_kind == "porep-c2")


def wait_running(pb, stub, limit_s=120.0):
    start = time.monotonic()
    while in_progress(pb, stub) == 0:
        if time.monotonic() - start > limit_s:
            raise SystemExit("curio_client: no PoRep job came in progress")
        time.sleep(0.02)


def prove_in_threads(pb, stub, args, submits, delays):
    """Prove each request on a thread of its own, after its delay (None: once a PoRep job is in
    progress); the (record, proof) of each, in order."""
    results = [None] * len(submits)

    def run(i):
        if delays[i] is None:
            wait_running(pb, stub)
        else:
            time.sleep(delays[i])
        results[i] = call_prove(pb, stub, args, submits[i])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(submits))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def retries_scenario(pb, stub, args):
    completed = "cuzk_proofs_completed_total"
    cancelled = 'cuzk_proofs_cancelled_total{proof_kind="porep_c2"}'
    failed_id = f"porep-{args.miner_id}-{args.sector_number}"

    record, _ = call_prove(pb, stub, args, porep_request(pb, args, c1_path=args.tampered_c1))
    failed = record.get("status") == "FAILED"
    emit({"step": "failed", "ok": failed, "error_message": record.get("error_message")})

    before = counter(pb, stub, completed)
    good = porep_request(pb, args)
    results = prove_in_threads(pb, stub, args, [good] * 4, [0, 0, 0, None])
    proofs = [proof for _, proof in results]
    one_proof = all(p is not None for p in proofs) and len(set(proofs)) == 1
    attempts = counter(pb, stub, completed) - before
    retried = one_proof and attempts == 1
    emit({"step": "retried", "ok": retried, "callers": len(results),
          "distinct_proofs": len({p for p in proofs if p is not None}), "new_attempts": attempts})
    if proofs[0] is not None:
        write_atomically(args.proof_out, proofs[0])

    before = counter(pb, stub, cancelled)
    shared_id = f"porep-{args.miner_id}-{args.other_sector_number}"
    first = porep_request(pb, args, request_id=shared_id)
    second = porep_request(pb, args, c1_path=args.other_c1,
                           sector_number=args.other_sector_number, request_id=shared_id)
    results = prove_in_threads(pb, stub, args, [first, second], [0, None])
    proofs = [proof for _, proof in results]
    superseded_ok = (proofs[1] is not None and proofs[0] == proofs[1]
                     and counter(pb, stub, cancelled) - before == 1)
    emit({"step": "superseded", "ok": superseded_ok,
          "same_proof": proofs[0] == proofs[1] and proofs[0] is not None,
          "cancelled": counter(pb, stub, cancelled) - before})
    if proofs[1] is not None:
        write_atomically(args.other_proof_out, proofs[1])
    return failed and retried and superseded_ok


def status(pb, stub):
    try:
        response = stub.GetStatus(pb.GetStatusRequest(), timeout=5.0)
    except grpc.RpcError as e:
        emit({"rpc": "GetStatus", "grpc_error": e.code().name, "details": e.details()})
        return
    emit({"rpc": "GetStatus", **message_dict(response)})


if __name__ == "__main__":
    sys.exit(main())
