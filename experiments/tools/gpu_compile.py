"""The optimizer benchmarks' steps compiled for an NVIDIA H100 on a machine without a GPU.

``python -m experiments gpu-compile [--num-params N] [--only NAME ...] [--out DIR]`` compiles
each step of :mod:`experiments.tools.bench_optim` (method and reference; plain ``jit``, donated, and
donated with the gradient passed in) ahead of time for an H100, through XLA's GPU compiler
with a device description instead of a device, and reads the optimized program:

* ``kernels``: the launches of the step (fusions, library calls such as GEMMs, copies);
* ``traffic``: the bytes each launch reads (each distinct operand once) and writes, summed:
  an estimate of the step's DRAM traffic (a value read by two launches counts twice; an L2
  hit is not seen, nor a GEMM re-reading its operands);
* ``copies``: buffer copies XLA inserted (donation conflicts).

These are static facts about the compiled program, not timings: at 100M parameters the H200
timings of the elementwise steps came close to the traffic ratio (README), while at 10M launch
counts and per-element work matter too. The point is to see what a GPU compile does (how
it fuses, what it copies, what it folds away) where no GPU is at hand; it found that XLA's
GPU backend folded M+Adam's cast-based rounding away (see
:func:`jaxopt_icml.optim.round_to_format`).

``--cases`` instead compiles every case of the property matrix (a transformation's step, an
algorithm's 3-step run) for the H100, or with ``--platform tpu-v5e`` for one chip of a TPU
v5e slice (needs libtpu, ``pip install "jax[tpu]"``), and lists those that fail.

Needs JAX's CUDA plugin (``pip install "jax[cuda13]"``, several GB; no GPU or driver
needed). Without it the command says so and exits with status 2.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from typing import NamedTuple

#: Device description of an H100 SXM (80 GB HBM3): XLA's GPU target configuration, text form.
H100_TARGET = """
gpu_device_info {
  threads_per_block_limit: 1024
  threads_per_warp: 32
  shared_memory_per_block: 49152
  shared_memory_per_block_optin: 232448
  shared_memory_per_core: 233472
  threads_per_core_limit: 2048
  core_count: 132
  fpus_per_core: 128
  block_dim_limit_x: 2147483647
  block_dim_limit_y: 65535
  block_dim_limit_z: 65535
  memory_bandwidth: 3352320000000
  l2_cache_size: 52428800
  clock_rate_ghz: 1.98
  device_memory_size: 84929347584
  registers_per_core_limit: 65536
  registers_per_block_limit: 65536
  cuda_compute_capability { major: 9 minor: 0 }
}
platform_name: "CUDA"
dnn_version_info { major: 9 minor: 10 }
runtime_version { major: 13 minor: 0 }
device_description_str: "NVIDIA H100 80GB HBM3"
"""

MODES = ("plain", "donated", "donated-grad-input")  # of experiments.tools.bench_optim.MODES

_BYTES = {"pred": 1, "s8": 1, "u8": 1, "f8e4m3fn": 1, "f8e5m2": 1, "f4e2m1fn": 1, "s16": 2,
          "u16": 2, "f16": 2, "bf16": 2, "s32": 4, "u32": 4, "f32": 4, "s64": 8, "u64": 8,
          "f64": 8, "c64": 8, "c128": 16, "token": 0}
# instructions of the entry computation that launch nothing
_FREE = {"parameter", "tuple", "get-tuple-element", "bitcast", "constant"}
# instructions whose bodies run kernels this count does not see
_CONTROL_FLOW = {"while", "conditional", "call", "async-start"}
_INSTRUCTION = re.compile(r"\s*(?:ROOT )?%([\w.\-]+) = (\([^=]*?\)|\S+) ([\w\-]+)\((.*)")


class Kernel(NamedTuple):
    """One launch of a compiled step: its HLO name and opcode, the fusion kind (``""`` for a
    non-fusion), and the bytes it reads (each distinct operand once) and writes."""

    name: str
    opcode: str
    kind: str
    bytes_in: int
    bytes_out: int


def shape_bytes(shape: str) -> int:
    """Bytes of an HLO shape or tuple of shapes, e.g. ``(f32[2,3]{1,0}, bf16[4]{0})`` -> 32.
    Raises ``ValueError`` on an element type or a (dynamic) dimension it cannot size."""
    total = 0
    for dtype, dims in re.findall(r"\b([a-z]+\d*(?:e\d+m\d+\w*)?)\[([^\]]*)\]", shape):
        if dtype not in _BYTES or not re.fullmatch(r"[\d,]*", dims):
            raise ValueError(f"cannot size {dtype}[{dims}] in {shape!r}")
        size = 1
        for d in filter(None, dims.split(",")):
            size *= int(d)
        total += _BYTES[dtype] * size
    return total


def _operands(rest: str) -> list[str]:
    """Distinct operand names of an instruction, from the text after its opcode's ``(``: up to
    the matching ``)``, whatever parentheses the operands' printed shapes contain."""
    depth, end = 1, 0
    while end < len(rest) and depth:
        depth += {"(": 1, ")": -1}.get(rest[end], 0)
        end += 1
    return list(dict.fromkeys(re.findall(r"%([\w.\-]+)", rest[:end])))


def entry_kernels(hlo_text: str) -> list[Kernel]:
    """The launches of the entry computation of an optimized HLO module, in program order.
    Raises ``ValueError`` on an instruction line it cannot read."""
    start = hlo_text.index("\nENTRY")
    entry = hlo_text[start:hlo_text.index("\n}", start)]
    entry = re.sub(r"/\*index=\d+\*/", "", entry)  # tuple-shape comments contain '='
    shapes: dict[str, str] = {}
    kernels = []
    for line in entry.splitlines()[1:]:
        match = _INSTRUCTION.match(line)
        if not match:
            if re.match(r"\s*(ROOT )?%", line):
                raise ValueError(f"cannot read HLO instruction: {line[:200]}")
            continue
        name, shape, opcode, rest = match.groups()
        shapes[name] = shape
        if opcode in _FREE:
            continue
        kind = re.search(r"kind=(\w+)", line)
        kernels.append(Kernel(name, opcode, kind.group(1) if kind else "",
                              sum(shape_bytes(shapes.get(o, "")) for o in _operands(rest)),
                              shape_bytes(shape)))
    return kernels


def summarize(kernels: list[Kernel]) -> dict:
    """Launch count, summed bytes (``traffic_bytes``: read + written per launch, an estimate
    of DRAM traffic: an L2 hit is not seen, nor a GEMM re-reading its operands), copies,
    control-flow instructions (whose bodies are not counted) and launches by fusion kind."""
    return {"kernels": len(kernels),
            "traffic_bytes": sum(k.bytes_in + k.bytes_out for k in kernels),
            "copies": sum(k.opcode == "copy" for k in kernels),
            "control_flow": sum(k.opcode in _CONTROL_FLOW for k in kernels),
            "by_kind": dict(Counter(k.kind or k.opcode for k in kernels))}


def gpu_sharding(target: str = H100_TARGET):
    """A single-device sharding on a described (absent) CUDA GPU, for ahead-of-time compiles.
    Raises ``RuntimeError`` naming the missing package when JAX has no CUDA plugin."""
    os.environ.setdefault("JAX_SKIP_CUDA_CONSTRAINTS_CHECK", "1")  # no driver, no cuPTI here
    import jax
    from jax.experimental import topologies

    try:
        topology = topologies.get_topology_desc(platform="cuda", target_config=target,
                                                topology="1x1x1")
    except (NotImplementedError, RuntimeError, ValueError) as err:
        raise RuntimeError(
            "compiling for a GPU without one needs JAX's CUDA plugin: pip install "
            f"'jax[cuda13]=={jax.__version__}' (no GPU or driver needed), and "
            "JAX_SKIP_CUDA_CONSTRAINTS_CHECK=1 in the environment before JAX starts its "
            f"backends (this function sets it, too late if they already run); got: {err}"
        ) from err
    mesh = topologies.make_mesh(topology, (1,), ("d",))
    return jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())


def tpu_sharding(topology: str = "v5e:2x2"):
    """A single-device sharding on one chip of a described (absent) TPU slice, for the
    ``--cases`` compile. Raises ``RuntimeError`` when JAX has no TPU library (libtpu)."""
    import jax
    from jax.experimental import topologies

    try:
        described = topologies.get_topology_desc(topology, "tpu")
    except Exception as err:  # noqa: BLE001 - missing libtpu shows up in several ways
        raise RuntimeError("compiling for a TPU without one needs libtpu: pip install "
                           f"'jax[tpu]=={jax.__version__}'; got: {err}") from err
    return jax.sharding.SingleDeviceSharding(described.devices[0])


def compile_step(tx, tree, sharding, *, donate: bool, grad_input: bool) -> str:
    """Optimized HLO text of :func:`experiments.tools.bench_optim.step_fn` for ``tx`` on ``tree``'s
    shapes, compiled for ``sharding``'s device."""
    import jax

    from experiments.tools import bench_optim

    def spec(x):
        return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)

    params = jax.tree.map(spec, jax.eval_shape(lambda: tree))
    state = jax.tree.map(spec, jax.eval_shape(tx.init, tree))
    args = (params, state) + ((params,) if grad_input else ())
    step = bench_optim.step_fn(tx, donate=donate)
    return step.lower(*args).compile().as_text()


def run(*, num_params: int = 10_000_000, matrix_side: int = 1024, only=None,
        target: str = H100_TARGET) -> dict:
    """``{benchmark: {mode: {"a": summary, "b": summary, "traffic_ratio", "kernel_ratio"}}}``."""
    from experiments.tools import bench, bench_optim

    sharding = gpu_sharding(target)
    out = {}
    for pair in bench_optim.pairs(big_pytree=bench._big_pytree, num_params=num_params,
                                  matrix_side=matrix_side):
        if only and pair.name not in only:
            continue
        out[pair.name] = {}
        for mode in MODES:
            donate, grad_input = bench_optim.MODES[mode]
            a, b = (summarize(entry_kernels(compile_step(tx, pair.tree, sharding, donate=donate,
                                                         grad_input=grad_input)))
                    for tx in (pair.a, pair.b))
            out[pair.name][mode] = {"a": a, "b": b,
                                    "traffic_ratio": a["traffic_bytes"] / b["traffic_bytes"],
                                    "kernel_ratio": a["kernels"] / b["kernels"]}
    return out


def compile_cases(sharding, root: str = ".") -> list[tuple[str, str, str | None]]:
    """Compiles every case of the property matrix (the ``CONTRACT_CASES`` of each paper's test
    module in the catalog): a transformation's jitted step on the matrix's parameters, an
    algorithm's jitted 3-step ``base.run`` on its problem. Returns ``(test module, case,
    None or the error)`` per case. Needs the test modules' imports (the ``dev`` extra)."""
    import importlib.util
    import pathlib

    import jax
    import jax.numpy as jnp

    from experiments import runner
    from jaxopt_icml import base, catalog
    from jaxopt_icml.testing import TransformationCase
    from jaxopt_icml.testing.transformations import _make, _step_fn
    from jaxopt_icml.testing.trees import make_params

    def spec(x):
        if hasattr(x, "shape") and hasattr(x, "dtype"):
            return jax.ShapeDtypeStruct(x.shape, x.dtype, sharding=sharding)
        return x

    out = []
    for row in catalog.papers():
        path = pathlib.Path(root) / runner.test_path(row)
        if not path.is_file() or "CONTRACT_CASES" not in path.read_text():
            continue
        module_spec = importlib.util.spec_from_file_location(f"_gpu_cases_{path.stem}", path)
        module = importlib.util.module_from_spec(module_spec)
        try:
            module_spec.loader.exec_module(module)
        except Exception as err:  # noqa: BLE001 - reported as the module's row
            out.append((path.stem, "(import)", f"{type(err).__name__}: {err}"[:300]))
            continue
        for case in module.CONTRACT_CASES:
            try:
                if isinstance(case, TransformationCase):
                    tx, params = _make(case), make_params()
                    args = (params, tx.init(params))
                    fn = jax.jit(_step_fn(tx, case))
                else:
                    alg = case.make(**case.kwargs)
                    x0, oracle = case.problem(jax.random.PRNGKey(1234), jnp.float32)
                    args = (x0, oracle, jax.random.PRNGKey(0))
                    fn = jax.jit(lambda x0, oracle, key, alg=alg: base.run(alg, x0, oracle, key,
                                                                           3))
                fn.lower(*jax.tree.map(spec, args)).compile()
                out.append((path.stem, case.name, None))
            except Exception as err:  # noqa: BLE001 - reported per case, the sweep goes on
                out.append((path.stem, case.name, f"{type(err).__name__}: {err}"[:300]))
    return out


def format_table(results: dict) -> str:
    lines = [f"{'benchmark':30s} {'mode':19s} {'kernels A/B':>12s} {'traffic A/B (MB)':>18s} "
             f"{'ratio':>6s} {'copies A/B':>10s}", "-" * 100]
    for name, modes in results.items():
        for mode, row in modes.items():
            a, b = row["a"], row["b"]
            lines.append(f"{name:30s} {mode:19s} {a['kernels']:>5d} / {b['kernels']:<5d}"
                         f"{a['traffic_bytes'] / 1e6:>9.1f} / {b['traffic_bytes'] / 1e6:<7.1f}"
                         f" {row['traffic_ratio']:6.3f} {a['copies']:>5d} / {b['copies']:<4d}")
    return "\n".join(lines)


def add_arguments(parser) -> None:
    parser.add_argument("--num-params", type=int, default=10_000_000,
                        help="pytree size (default 10M, as the timed benchmarks)")
    parser.add_argument("--only", nargs="+", default=None, metavar="NAME",
                        help="benchmarks of experiments.tools.bench_optim.TARGETS to compile")
    parser.add_argument("--out", default=None, help="output directory (default runs/gpu-compile)")
    parser.add_argument("--cases", action="store_true",
                        help="instead, compile every case of the property matrix (needs the "
                             "dev extra) and list those that fail")
    parser.add_argument("--platform", choices=("h100", "tpu-v5e"), default="h100",
                        help="target of --cases: the H100 (CUDA plugin) or one TPU v5e chip "
                             "(libtpu, pip install 'jax[tpu]')")


def main(args) -> int:
    from experiments.tools import bench_optim

    cases = getattr(args, "cases", False)
    if getattr(args, "platform", "h100") != "h100" and not cases:
        print("error: --platform tpu-v5e applies to --cases only (launch counts and traffic are "
              "read for the GPU compile)")
        return 2
    if cases:
        if args.only:
            print("error: --only selects benchmarks; --cases compiles every case")
            return 2
        # the distributed cases build one worker per local device, as in tests/conftest.py
        # (the flag takes effect only if JAX's backends have not started yet)
        flag = "--xla_force_host_platform_device_count"
        if flag not in os.environ.get("XLA_FLAGS", ""):
            os.environ["XLA_FLAGS"] = f"{os.environ.get('XLA_FLAGS', '')} {flag}=8".strip()
    unknown = set(args.only or ()) - set(bench_optim.TARGETS)
    if unknown:
        print(f"error: unknown benchmark(s) {sorted(unknown)}; known: {list(bench_optim.TARGETS)}")
        return 2
    try:
        if cases:
            tpu = args.platform == "tpu-v5e"
            rows = compile_cases(tpu_sharding() if tpu else gpu_sharding())
            for module, case, error in rows:
                print(f"{'ok  ' if error is None else 'FAIL'} {module:36s} {case}"
                      + ("" if error is None else f": {error}"))
            failed = sum(error is not None for *_, error in rows)
            print(f"{len(rows) - failed} of {len(rows)} cases compiled for "
                  f"{'a TPU v5e chip' if tpu else 'the H100'}")
            return 1 if failed else 0
        results = run(num_params=args.num_params, only=args.only)
    except RuntimeError as err:
        print(f"error: {err}")
        return 2
    print("compiled for: NVIDIA H100 (described, no device); traffic = bytes read + written "
          "per launch, summed (an estimate)")
    print(format_table(results))
    hidden = {name for name, modes in results.items() for row in modes.values()
              if row["a"]["control_flow"] or row["b"]["control_flow"]}
    if hidden:
        print(f"note: control flow in {sorted(hidden)}: launches inside loops, "
              "conditionals and calls are not counted")
    out = args.out or os.path.join("runs", "gpu-compile")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "gpu_compile.json"), "w") as f:
        json.dump(results, f, indent=2)
    print(f"wrote {os.path.join(out, 'gpu_compile.json')}")
    return 0
