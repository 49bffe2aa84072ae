"""The trust corpus (issue 13, tests/trust): each candidate gets its header's verdict on the CPU,
through `bench` and through `watch --once` alike.

Headers (tests/corpus.py reads the first line):

    # expect: <state> | <message fragment>
    # flags: <code>, ...          codes the result must carry on every device ("a|b": either)
    # absent: <text>              must not appear in the message (a TF32 hint on an fp16 problem)
    # gpu-expect / gpu-flags      what the GPU must give instead or as well (benches/gpu_trust.py)
    # why: ...                    why the expectation holds, where it is not obvious

The corpus is the spec: a failure here is a verdict trialtui gets wrong, not a case to relax.

Both paths share one checker (the benchmark job), so every candidate's verdict, flags and absent
texts are checked through `watch --once` (one CLI run per problem scores all of its candidates; the
flags come from the trial store it leaves), and `bench` (one CLI run per candidate) on a
representative subset: one candidate of each verdict class in each form, flagged ones first, which
covers every exit status.
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import corpus
from trialtui.core.problem_dir import load_problem
from trialtui.core.store import Store

CORPUS = Path(__file__).resolve().parent / "trust"
CASES = corpus.cases(CORPUS)
PROBLEMS = sorted({case.problem for case in CASES})
HEADER = re.compile(r"^#\s*(flags|absent)\s*:\s*(.*?)\s*$")
BENCH_EXIT = {"correct": 0, "incorrect": 1}  # error, timeout, invalid: 2


def extras(path: Path) -> tuple[list[str], list[str]]:
    """The `# flags:` codes and `# absent:` texts of a candidate's header."""
    flags, absent = [], []
    for line in path.read_text(encoding="utf-8").splitlines()[:6]:
        match = HEADER.match(line)
        if match and match[1] == "flags":
            flags += [code.strip() for code in match[2].split(",") if code.strip()]
        elif match:
            absent.append(match[2])
    return flags, absent


def test_the_corpus_covers_both_forms_three_dtypes_and_every_state():
    assert len(CASES) >= 60
    problems = {name: load_problem(CORPUS / name) for name in PROBLEMS}
    assert {p.form for p in problems.values()} == {"kernelbench", "gpumode"}
    assert {p.config.dtype for p in problems.values()} == {"float32", "float16", "bfloat16"}
    assert {s for case in CASES for s in case.states} == set(corpus.STATES)
    for name, problem in problems.items():
        headed = {case.file for case in CASES if case.problem == name}
        assert {p.name for p in problem.candidates()} == headed, f"{name}: a candidate without a header"
        states = [case.states for case in CASES if case.problem == name]
        assert ("correct",) in states and any("correct" not in s for s in states), f"{name}: needs right and wrong"


def flag_and_text_mismatches(case: corpus.Case, path: Path, result: dict) -> list[str]:
    """What a result lacks of the header's `# flags:` codes, or shows of its `# absent:` texts."""
    flags, absent = extras(path)
    codes = {f.get("code") for f in result.get("flags") or [] if isinstance(f, dict)}
    wrong = [f"{case.id}: flag {code} missing (has {sorted(codes)})" for code in flags
             if not set(code.split("|")) & codes]
    message = str(result.get("message") or "")
    return wrong + [f"{case.id}: the message says {text!r}: {message[:200]}" for text in absent if text in message]


@pytest.mark.slow
@pytest.mark.parametrize("problem", PROBLEMS)
def test_watch_once_gives_every_candidate_its_verdict_and_flags(problem, tmp_path):
    root = corpus.copy_problem(CORPUS, problem, tmp_path)
    final, _, returncode = corpus.run_watch(root)
    assert returncode == 0, final.get("__cli__")
    with Store.open(root, writer=False) as store:
        results = {t.file: t.result.to_json() if t.result else {} for t in store.trials()}
    wrong = []
    for case in (c for c in CASES if c.problem == problem):
        wrong.append(corpus.mismatch(case, final.get(case.file)))
        wrong += flag_and_text_mismatches(case, root / case.file, results.get(case.file, {}))
    assert not [w for w in wrong if w], "\n".join(w for w in wrong if w)


def bench_subset(cases: list[corpus.Case]) -> list[corpus.Case]:
    """One candidate per (form, verdict class), preferring one whose header names flags or absent texts."""
    forms = {name: load_problem(CORPUS / name).form for name in PROBLEMS}
    chosen: dict[tuple[str, str], corpus.Case] = {}
    for case in sorted(cases, key=lambda c: (not any(extras(CORPUS / c.problem / c.file)), c.id)):
        chosen.setdefault((forms[case.problem], case.states[0]), case)
    return sorted(chosen.values(), key=lambda c: c.id)


def test_the_bench_subset_covers_every_verdict_class_and_exit_status():
    subset = bench_subset(CASES)
    assert {c.states[0] for c in subset} == set(corpus.STATES)
    assert {BENCH_EXIT.get(c.states[0], 2) for c in subset} == {0, 1, 2}
    assert any(extras(CORPUS / c.problem / c.file)[0] for c in subset), "no flagged candidate in the subset"
    assert len(subset) <= 12


@pytest.mark.slow
def test_bench_gives_its_verdict_flags_and_exit_status_to_a_representative_subset(tmp_path):
    def one(case: corpus.Case) -> list[str]:
        root = corpus.copy_problem(CORPUS, case.problem, tmp_path / case.file.removesuffix(".py"))
        result, _ = corpus.run_bench(root / case.file)
        wrong = [corpus.mismatch(case, result)] + flag_and_text_mismatches(case, root / case.file, result)
        status = BENCH_EXIT.get(result.get("state"), 2)
        if result.get("state") in corpus.STATES and result["cli_returncode"] != status:
            wrong.append(f"{case.id}: bench exited {result['cli_returncode']} for {result['state']}, not {status}")
        return [w for w in wrong if w]

    with ThreadPoolExecutor(max_workers=2) as pool:
        wrong = [w for found in pool.map(one, bench_subset(CASES)) for w in found]
    assert not wrong, "\n".join(wrong)
