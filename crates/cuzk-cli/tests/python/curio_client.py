#!/usr/bin/env python3
"""A cuzk.v1 client from another gRPC stack (Python grpcio), talking to `cuzk serve` as Curio does.

Stubs are generated at run time from crates/cuzk-daemon/proto/cuzk/v1/proving.proto (grpc_tools),
so this client knows the API only through the .proto file. It connects without credentials with
256 MiB send and receive limits and the `:authority` grpc-go sends on a unix socket
("localhost"; see --authority), sends a PoRep C2 `Prove` formed as Curio forms it, writes the
proof, then calls `GetStatus` (with Curio's 5 s deadline). Each rpc prints one JSON line on
stdout:

    {"rpc": "Prove", "status": "COMPLETED", "proof_bytes": 192, "total_ms": ..., "wall_s": ...}
    {"rpc": "GetStatus", "total_proofs_completed": "1", ...}

Exit status: 0 when the proof came back COMPLETED and non-empty (Curio's test), 1 otherwise,
2 for unusable arguments or stubs that cannot be generated.

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


def porep_request(pb, args):
    """The SubmitProofRequest Curio's PoRep task sends."""
    with open(args.c1, "rb") as f:
        c1 = f.read()
    # Curio: json.Marshal of {SectorNum int64; Phase1Out []byte; SectorSize uint64}; Go encodes
    # []byte as standard base64.
    vanilla = json.dumps(
        {
            "SectorNum": args.sector_number,
            "Phase1Out": base64.b64encode(c1).decode("ascii"),
            "SectorSize": args.sector_size,
        }
    ).encode()
    return pb.SubmitProofRequest(
        request_id=f"porep-{args.miner_id}-{args.sector_number}",
        proof_kind=pb.POREP_SEAL_COMMIT,
        sector_size=args.sector_size,
        registered_proof=args.registered_proof,
        priority=pb.NORMAL,
        vanilla_proof=vanilla,
        sector_number=args.sector_number,
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
            ok = prove(pb, stub, args)
            status(pb, stub)
        return 0 if ok else 1
    finally:
        shutil.rmtree(stubs, ignore_errors=True)


def prove(pb, stub, args):
    request = pb.ProveRequest(submit=porep_request(pb, args))
    start = time.monotonic()
    try:
        response = stub.Prove(request, timeout=args.timeout)
    except grpc.RpcError as e:
        emit({"rpc": "Prove", "grpc_error": e.code().name, "details": e.details(),
              "wall_s": round(time.monotonic() - start, 3)})
        return False
    wall = time.monotonic() - start
    result = response.result
    status_name = pb.AwaitProofResponse.Status.Name(result.status)
    ok = status_name == "COMPLETED" and len(result.proof) > 0
    if ok:
        partial = args.proof_out + ".partial"
        with open(partial, "wb") as f:
            f.write(result.proof)
        os.replace(partial, args.proof_out)
    emit(
        {
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
            "wall_s": round(wall, 3),
        }
    )
    return ok


def status(pb, stub):
    try:
        response = stub.GetStatus(pb.GetStatusRequest(), timeout=5.0)
    except grpc.RpcError as e:
        emit({"rpc": "GetStatus", "grpc_error": e.code().name, "details": e.details()})
        return
    emit({"rpc": "GetStatus", **message_dict(response)})


if __name__ == "__main__":
    sys.exit(main())
