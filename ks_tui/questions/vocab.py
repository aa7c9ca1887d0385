"""The fixed vocabularies a question bank is checked against.

Kept in one place so the loader, the selection and the docs agree on the same names.
"""

from __future__ import annotations

# Categories a bank question may use. `human` is reserved for questions a person types:
# they are recorded like bank questions but a bank may not declare it.
CATEGORIES: dict[str, str] = {
    "layer": "change the system layer being optimized (algorithm, tiling, memory pipeline, "
             "instructions, synchronization, launch, host side)",
    "limit": "reject a limit the agent believes in",
    "measurement": "is the number real; what the profile, SASS or register report says",
    "correctness": "which scenarios fail and why",
    "simplification": "what can be removed",
    "strategy": "what the best known kernels do; whether the effort is worth it",
}
HUMAN_CATEGORY = "human"
RECORD_CATEGORIES = frozenset(CATEGORIES) | {HUMAN_CATEGORY}

# Decision points, in the order `detect` reports them (most urgent first).
POINTS: tuple[str, ...] = (
    "suspicious_gain",
    "failure_streak",
    "plateau",
    "agent_stop",
    "every_n_steps",
    "session_start",
)

# Conditions a question may require; each is a boolean key of the context dict
# (see context.build_context). A key missing from the context counts as false.
REQUIREMENTS: dict[str, str] = {
    "is_cuda": "the task's kernel is CUDA",
    "is_cpu": "the task's kernel is C++ for the CPU",
    "has_correct_attempt": "at least one attempt passed every scenario",
    "has_failures": "at least one attempt failed (compile error, crash, timeout, incorrect)",
    "has_failing_scenarios": "the latest run has scenarios that fail the correctness check",
    "has_losing_scenarios": "the latest run has scenarios slower than the best baseline",
    "beats_baseline": "the best correct attempt is faster than the best baseline overall",
    "below_baseline": "the best correct attempt is slower than the best baseline overall",
    "has_spills": "the latest CUDA build spills registers to local memory",
    "has_serialized_wgmma": "ptxas reported a performance loss (a serialised wgmma pipeline) in the latest build",
    "has_sass": "the latest build reported a SASS instruction summary",
    "has_rollbacks": "the session has rolled back at least once",
}

# Attempt statuses that count as a failure of the kernel (docs/design.md, harness result).
FAILURE_STATUSES = frozenset({"compile_error", "crashed", "timeout", "incorrect"})
# Attempts that measured nothing: a cancelled run, a human edit committed unchecked.
# They neither break nor extend a failure streak, and do not count toward a plateau.
UNMEASURED_STATUSES = frozenset({"cancelled", "unchecked"})
