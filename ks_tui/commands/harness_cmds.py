"""`ks check`, `ks bench`, `ks compare`, `ks scenarios`, `ks doctor`: the harness from the command line.

No torch at import time: the harness's heavy work runs in its child process.
"""

from __future__ import annotations

import json
import os
import sys

from ks_tui.cluster import add_arguments as cluster_arguments
from ks_tui.errors import EXIT_KERNEL_FAILED, EXIT_OK, KsError
from ks_tui.pairs import DECLARED


def register(sub) -> None:
    from ks_tui.commands import lab_cmds

    for mode, text in RUN_MODES:
        p = sub.add_parser(mode, help=text, description=text)
        add_run_args(p)
        if mode == "check":
            p.add_argument("--sanitize", action="store_true",
                           help="CUDA: run the smallest scenario of each family (or --scenarios) under "
                                "compute-sanitizer's memcheck, racecheck, initcheck and synccheck; any finding fails")
        cluster_arguments(p)
        lab_cmds.add_pair_args(p, hidden=True)  # `ks lab bench`'s; here unlisted, with a notice
        p.set_defaults(func=lambda a, m=mode: run_cmd(a, m))

    text = "bench several kernel files on the same scenarios and inputs, in alternating order"
    p = sub.add_parser("compare", help=text, description=text)
    add_compare_args(p)
    cluster_arguments(p)
    lab_cmds.add_compare_lab_args(p, hidden=True)  # `ks lab compare`'s; here unlisted, with a notice
    p.set_defaults(func=compare_cmd)

    p = sub.add_parser("scenarios", help="list a task's scenarios", description="list a task's scenarios")
    p.add_argument("task", metavar="TASK")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=scenarios_cmd)

    text = "the harness children kept waiting between `ks check`, `ks bench` and `ks try` runs (KS_STANDBY=0: none)"
    p = sub.add_parser("standby", help=text, description=text)
    p.add_argument("action", nargs="?", choices=("list", "stop"), default="list",
                   help="list the waiting servers (default) or stop them")
    p.add_argument("--task", metavar="TASK", help="with stop: only this task's")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=standby_cmd)

    p = sub.add_parser("doctor", help="what this machine offers: GPU, compilers, baselines, API key",
                       description="what this machine offers: GPU, compilers, baselines, API key")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=doctor_cmd)


RUN_MODES = (("check", "compile the kernel and check it on every scenario"),
             ("bench", "check, then time the kernel against the task's baselines"))


def add_run_args(p) -> None:
    """`ks check` / `ks bench` arguments (also `ks lab check|bench`)."""
    p.add_argument("task", metavar="TASK", help="task name under kernels/, or a path to a task folder")
    p.add_argument("--source", metavar="FILE", help="kernel file to use instead of the task's own")
    p.add_argument("--quick", action="store_true", help="only the task's quick subset")
    p.add_argument("--scenarios", metavar="ID", nargs="+", action="extend",
                   help="only these scenario ids (space or comma separated)")
    p.add_argument("--json", action="store_true", help="print only the result JSON on stdout")
    p.add_argument("--timeout", type=float, metavar="S", help="kill the run after S seconds")
    p.add_argument("--seed", type=int, help="input seed (default: a new one each run)")


def add_compare_args(p) -> None:
    """`ks compare` arguments (also `ks lab compare`)."""
    p.add_argument("task", metavar="TASK", help="task name under kernels/, or a path to a task folder")
    p.add_argument("candidates", metavar="NAME=FILE", nargs="+",
                   help="kernel files (at least two); the first is the reference of the 'vs' row")
    p.add_argument("--quick", action="store_true", help="only the task's quick subset")
    p.add_argument("--scenarios", metavar="ID", nargs="+", action="extend",
                   help="only these scenario ids (space or comma separated)")
    p.add_argument("--rounds", type=int, default=1, metavar="N",
                   help="bench every file N times, order reversed every other round (default 1)")
    p.add_argument("--timeout", type=float, metavar="S", help="kill each run after S seconds")
    p.add_argument("--seed", type=int, help="input seed of the first round, +1 per round (default: a new one); "
                                             "every file of a round gets the same inputs")
    p.add_argument("--json", action="store_true", help="print one JSON document (summary and every result)")


def _load(args):
    from ks_tui.paths import bundled_root, find_workspace
    from ks_tui.task import load_task

    explicit = getattr(args, "workspace", None) or os.environ.get("KS_WORKSPACE")
    workspace = find_workspace(explicit)
    if not explicit and workspace == bundled_root() and not _inside(os.getcwd(), workspace):
        # Outside any workspace the installed bundled tasks are used (read-only use): said, not silent.
        print(f"ks: note: no workspace at or above {os.getcwd()}; using the bundled tasks in {workspace / 'kernels'}",
              file=sys.stderr, flush=True)
    return load_task(args.task, workspace)


def _inside(path: str, folder) -> bool:
    from pathlib import Path

    p = Path(path).resolve()
    return p == Path(folder) or Path(folder) in p.parents


class _Progress:
    """One updating line on a terminal; a plain line per scenario otherwise."""

    def __init__(self, live: bool, plain: bool):
        self.live, self.plain = live, plain
        self.last: str | None = None

    def __call__(self, p: dict) -> None:
        sid = p.get("scenario") or ""
        if not sid and p.get("phase") != "compile":
            return
        text = f"[{p['done'] + (1 if sid else 0)}/{p['total']}] {p['phase']} {sid or ''}".rstrip()
        if self.live:
            sys.stderr.write("\r\033[K" + text[:120])
            sys.stderr.flush()
        elif self.plain and text != self.last:
            print(text, file=sys.stderr, flush=True)
        self.last = text

    def close(self) -> None:
        if self.live and self.last:
            sys.stderr.write("\r\033[K")
            sys.stderr.flush()


def run_cmd(args, mode: str) -> int:
    from ks_tui.commands.lab_cmds import notice
    from ks_tui.harness.client import run_harness
    from ks_tui.harness.report import render

    notice(args, [("pair", "--pair"), ("cached_baselines", "--cached-baselines")], f"ks {mode}", f"ks lab {mode}")
    pair = _pair_tag(args.pair)
    task = _load(args)
    ids = scenario_ids(args.scenarios)
    spec = cluster_spec(args)
    if getattr(args, "sanitize", False):
        from ks_tui.commands.profile_cmds import sanitize_cmd

        return sanitize_cmd(args, task, ids)
    progress = _Progress(live=sys.stderr.isatty(), plain=not args.json)
    try:
        if spec is not None:  # Dask is imported only here
            from ks_tui.cluster.cli import WorkerProgress
            from ks_tui.cluster.run import run_sharded

            result = run_sharded(task, args.source, spec, mode=mode, quick=args.quick, scenarios=ids,
                                 timeout=args.timeout, seed=args.seed, cached_baselines=args.cached_baselines,
                                 on_event=WorkerProgress() if not args.json or sys.stderr.isatty() else None)
        else:
            pool = standby_pool()
            result = run_harness(task, args.source, mode=mode, quick=args.quick, scenarios=ids,
                                 timeout=args.timeout, seed=args.seed, on_progress=progress,
                                 cached_baselines=args.cached_baselines, pool=pool)
            say_standby(pool, task.name)
    finally:
        progress.close()
    if pair:
        result["pair"] = pair
    if args.json:
        print(json.dumps(result, indent=1))
    else:
        print(render(result))
        if spec is not None:
            from ks_tui.cluster.cli import summary_lines

            print(summary_lines(result))
    return EXIT_OK if result["status"] == "correct" else EXIT_KERNEL_FAILED


def standby_pool():
    """The pool of a one-shot command (`ks check`, `ks bench`, `ks try`): a standby server that outlives it
    (harness/standby.py); None when off."""
    from ks_tui.harness import standby, warm

    if not (standby.enabled() and warm.enabled()):
        return None
    return standby.StandbyPool()


def say_standby(pool, task_name: str) -> None:
    """Once, on stderr, when this command left a server behind."""
    if pool is not None and pool.started:
        print(f"ks: a harness child now waits {pool.idle_s:g} s for the next run of {task_name} "
              "(`ks standby stop` ends it; KS_STANDBY=0: none)", file=sys.stderr, flush=True)


def standby_cmd(args) -> int:
    from ks_tui.harness import standby

    if args.action == "stop":
        task_dir = _load(args).dir if args.task else None
        said = standby.stop(task_dir)
        if args.json:
            print(json.dumps({"stopped": said}, indent=1))
        else:
            print(f"asked {len(said)} standby server(s) to stop" + (" (a busy one ends after its run)" if said else ""))
        return EXIT_OK
    live = standby.servers()
    if args.json:
        print(json.dumps({"servers": live}, indent=1))
    elif not live:
        print("no standby harness server" + ("" if standby.enabled() else " (KS_STANDBY=0)"))
    else:
        for s in live:
            print(f"pid {s['pid']}  {s['task']}  sandbox {s['box']}  runs {s['runs']}  "
                  f"{'busy' if s['busy'] else 'waiting'}  idle limit {s['idle_s']:g} s")
    return EXIT_OK


MAX_ROUNDS = 1000  # more is a typo; the seeds must also stay below 2**31


def _pair_tag(tag: str | None) -> str:
    """A --pair TAG as stored ("" when none); KsError for one that cannot name a run."""
    if tag is None:
        return ""
    tag = tag.strip()
    if not tag or len(tag) > 100 or any(c.isspace() for c in tag):
        raise KsError(f"--pair wants a tag of 1-100 characters without spaces, not {tag!r}")
    if tag.startswith(DECLARED):
        raise KsError(f"--pair tags starting with {DECLARED!r} are the ones `ks lab remark --same-call` declares")
    return tag


def compare_cmd(args) -> int:
    import secrets

    from ks_tui.commands.lab_cmds import notice
    from ks_tui.harness import compare
    from ks_tui.harness.client import run_harness

    notice(args, [("by", "--by"), ("times", "--times"), ("cached_baselines", "--cached-baselines")],
           "ks compare", "ks lab compare")
    try:
        candidates = compare.parse_candidates(args.candidates)
    except ValueError as e:
        raise KsError(str(e)) from None
    for c in candidates:
        if not c.source.is_file():
            raise KsError(f"{c.name}: kernel file {c.source} not found")
    if not 1 <= args.rounds <= MAX_ROUNDS:
        raise KsError(f"--rounds must be between 1 and {MAX_ROUNDS}, not {args.rounds}")
    task = _load(args)
    ids = scenario_ids(args.scenarios)
    groups = None
    if args.by:
        keys = list(dict.fromkeys(k.strip() for k in args.by.split(",") if k.strip()))
        if not keys:
            raise KsError("--by names no parameter", hint="list them with `ks scenarios TASK`")
        try:
            groups = compare.group_labels({s.id: s.params for s in task.scenarios}, keys)
        except ValueError as e:
            raise KsError(str(e)) from None
    # Fresh inputs every round (a kernel never sees the same inputs twice), the same for every
    # file within a round (so the files compare).
    first = args.seed if args.seed is not None else secrets.randbelow(2**31 - args.rounds)
    seeds = [first + r for r in range(args.rounds)]
    # Every run of one round carries the same pair tag: an attempt recorded from one of them is then
    # judged against its round's other files (docs/questions.md, "Same-call pairs").
    run_id = secrets.token_hex(6)
    order = compare.run_order(len(candidates), args.rounds)
    progress = _Progress(live=sys.stderr.isatty(), plain=False)
    done, stopped = 0, None
    spec = cluster_spec(args)
    try:
        if spec is not None:  # each round's files side by side, one per worker
            from ks_tui.cluster.cli import run_compare_rounds

            done = run_compare_rounds(task, candidates, spec, seeds, run_id, args, ids, quiet=args.json)
        for k, i in enumerate(order if spec is None else [], 1):
            c = candidates[i]
            seed = seeds[(k - 1) // len(candidates)]
            if not args.json:
                print(f"[{k}/{len(order)}] {c.name}: {c.source} (seed {seed})", file=sys.stderr, flush=True)
            run = run_harness(task, c.source, mode="bench", quick=args.quick, scenarios=ids,
                              timeout=args.timeout, seed=seed, on_progress=progress,
                              cached_baselines=args.cached_baselines)
            run["pair"] = f"{run_id}:{(k - 1) // len(candidates) + 1}"
            c.runs.append(run)
            done = k
    except (KeyboardInterrupt, SystemExit) as e:
        # Ctrl-C, or SIGTERM / SIGHUP (cli turns those into SystemExit): the run in progress is
        # already killed; the finished ones are an hour of GPU time on a long compare, so they are
        # still summed up, over the rounds every file completed (a half round would favour the
        # files that ran in it).
        stopped = 130 if isinstance(e, KeyboardInterrupt) else (e.code if isinstance(e.code, int) else 1)
    finally:
        progress.close()
    rounds = args.rounds
    if spec is not None:  # the rounds that finished side by side
        done = min(len(c.runs) for c in candidates) * len(candidates)
    if stopped is not None:
        rounds = done // len(candidates)
        print(f"ks: interrupted after {done} of {len(order)} runs; "
              + (f"the table holds the {rounds} complete round(s)" if rounds else
                 "no round completed, so nothing compares"), file=sys.stderr, flush=True)
        if not rounds and not args.json:
            return stopped
        for c in candidates:
            del c.runs[rounds:]
        seeds = seeds[:rounds]
    summary = compare.summarize(candidates, groups)
    if args.json:
        print(json.dumps({"task": task.name, "seeds": seeds, "rounds": rounds,
                          **({"interrupted": True, "runs_done": done} if stopped is not None else {}),
                          "order": [candidates[i].name for i in order[:rounds * len(candidates)]], **summary,
                          "candidates": [{"name": c.name, "source": str(c.source), "runs": c.runs}
                                         for c in candidates]}, indent=1))
    else:
        print(compare.render(candidates, summary, rounds, seeds, times=args.times))
    if stopped is not None:
        return stopped
    return EXIT_KERNEL_FAILED if summary["failed"] else EXIT_OK


def scenarios_cmd(args) -> int:
    task = _load(args)
    quick = set(task.quick)
    rows = [{"id": s.id, "quick": s.id in quick, "flops": task.flops_of(s), "params": s.params}
            for s in task.scenarios]
    if args.json:
        print(json.dumps({"task": task.name, "scenarios": rows}, indent=1))
        return EXIT_OK
    width = max(len(r["id"]) for r in rows)
    print(f"{task.name}: {len(rows)} scenarios ({len(quick)} in the quick subset, marked *)")
    for r in rows:
        params = " ".join(f"{k}={v:.4g}" if isinstance(v, float) else f"{k}={v}" for k, v in r["params"].items())
        print(f"{'*' if r['quick'] else ' '} {r['id'].ljust(width)}  {r['flops'] / 1e9:9.3f} GFLOP  {params}")
    return EXIT_OK


def doctor_cmd(args) -> int:
    from ks_tui.harness.doctor import diagnose

    report = diagnose()
    report["config"] = _config_report(args)
    report["agent"] = _agent_report(args)
    if args.json:
        print(json.dumps(report, indent=1))
        return EXIT_OK
    width = max(len(k) for k in report)
    for k, v in report.items():
        if isinstance(v, dict):
            v = ", ".join(f"{n}: {x}" for n, x in v.items())
        print(f"{k.ljust(width)}  {v}")
    return EXIT_OK


def _config_report(args) -> dict:
    """The agent's config files in the order they apply (each read, absent or broken), the KS_*
    variables that override them, and the model that results: where a setting came from."""
    from ks_tui import config
    from ks_tui.errors import InputFileError
    from ks_tui.paths import find_workspace, main_workspace

    try:
        workspace = main_workspace(find_workspace(getattr(args, "workspace", None)))
    except KsError:
        workspace = None
    paths = [config.user_config_path()] + ([workspace / ".ks" / "config.toml"] if workspace else [])
    out = {str(path): "read" if path.is_file() else "absent" for path in paths}
    out["environment"] = ", ".join(v for v in config.ENV_SETTINGS if os.environ.get(v)) or "no KS_* setting"
    try:
        out["model"] = config.load_config(workspace).resolved_model()
    except KsError as e:  # a broken file, or a KS_* variable of the wrong type
        out["model"] = f"none: {e.message}"  # the agent refuses to start with this setting
        for path in paths:
            if isinstance(e, InputFileError) and str(e.path) == str(path):
                out[str(path)] = "broken"
    return out


def scenario_ids(given: list[str] | None) -> list[str] | None:
    """--scenarios as given (space- or comma-separated); None when the option is absent. Given
    but empty ("" or ",") is refused: running every scenario instead would surprise."""
    if given is None:
        return None
    ids = [x.strip() for item in given for x in item.split(",") if x.strip()]
    if not ids:
        raise KsError("--scenarios names no scenario", hint="list them with `ks scenarios TASK`")
    return ids


__all__ = ["register", "KsError"]


def _agent_report(args) -> dict:
    """The model's server as the agent would use it: provider, base URL, model, and whether a key
    is set (its name only, never its value)."""
    from ks_tui import config
    from ks_tui.agent import providers
    from ks_tui.paths import find_workspace, main_workspace

    try:
        workspace = main_workspace(find_workspace(getattr(args, "workspace", None)))
    except KsError:
        workspace = None
    try:
        cfg = config.load_config(workspace)
    except KsError as e:  # the config section names the broken setting
        return {"provider": f"none: {e.message}"}
    key = next((v for v in providers.KEY_VARS if os.environ.get(v)), None)
    out = {"provider": cfg.provider, "base_url": providers.base_url(cfg.provider), "model": cfg.resolved_model(),
           "key": f"{key} is set" if key else f"not set ({' or '.join(providers.KEY_VARS)})"}
    if cfg.provider in ("bedrock", "vertex"):
        out["key"] = ("AWS credentials (the boto3 chain or AWS_BEARER_TOKEN_BEDROCK)" if cfg.provider == "bedrock"
                      else "Google application default credentials")
    return out


def cluster_spec(args):
    """--workers / --cluster / KS_CLUSTER / the config's `cluster`: None keeps the run on this machine."""
    from ks_tui.cluster.cli import spec_for

    return spec_for(args)
