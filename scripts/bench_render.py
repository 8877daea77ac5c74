"""The `bench-*` blocks of docs/performance.md and the README, each drawn from the benches' kept figures
(`scripts/bench_figures.py` runs them): every figure, ratio and "met / not met" here is computed from the record."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from figures_blocks import table

Benches = dict[str, Any]


def made(entry: dict[str, Any]) -> str:
    """One sentence: the bench's command, when, on which backend and machine."""
    m, v = entry["machine"], entry["versions"]
    return (
        f"Measured by `{entry['command']}` (`scripts/bench_figures.py`) on {entry['measured_at']}: reranker backend "
        f"{entry['backend']}, {m['cpu']} ({m['cores']} cores, {m['vector']}), workbench "
        f"{v.get('rerank-workbench', '?')}, torch {v.get('torch', '?')}."
    )


def met(value: float, goal: float, below: bool = True) -> str:
    """Whether `value` meets `goal` (at most it, or with below=False at least it)."""
    return "met" if (value <= goal if below else value >= goal) else "**not met**"


def stages(benches: Benches) -> str:
    entry = benches["search_latency"]
    f = entry["figures"]
    cells = [[name, f"{s['p50']:.1f}", f"{s['p95']:.1f}", f"{s['share']:.1f} %"] for name, s in f["stages"].items()]
    said = (
        f"{f['queries']} warm distinct queries on {f['collection']} ({f['passages']:,} passages), k = {f['k']} → "
        f"top {f['top_n']}: the cross-encoder takes {f['stages']['rerank']['share']:.1f} % of a query, "
        f"{f['k']} pairs at {f['pairs_per_s']:.1f} pairs/s. {made(entry)}"
    )
    return table(["stage", "p50 ms", "p95 ms", "share"], "|---|---:|---:|---:|", cells, said)


def repeated(benches: Benches) -> str:
    work, twice = benches["concurrent_queries"], benches["evaluate_twice"]
    f, (first, second) = work["figures"], twice["figures"]["runs"]
    reused = "reported from the first measurement" if second["depth_timings_reused"] else "measured again"
    cells = [
        ["repeated query, end to end", f"p50 {f['repeated_p50_ms']:.2f} ms, max {f['repeated_max_ms']:.2f} ms",
         "`bench/concurrent_queries.py`"],
        ["changing top n", f"p50 {f['top_n_change_p50_ms']:.2f} ms, {f['top_n_change_calls']} model calls",
         "`bench/concurrent_queries.py`"],
        ["Evaluate run twice with the same settings (demo, k = 50, depth 10, 20, 50)",
         f"first {first['seconds']:.1f} s and {first['model_calls']} model calls; second **{second['seconds']:.1f} s, "
         f"{second['model_calls']} model calls**, {second['cached_scores']:,} scores from the cache, the depth "
         f"curve's timings {reused}", "`bench/evaluate_twice.py`"],
    ]  # fmt: skip
    return table(["what", "figure", "command"], "|---|---|---|", cells, f"{made(work)} {made(twice)}")


def pipeline(benches: Benches) -> str:
    entry = benches["compare_pipeline"]
    f = entry["figures"]
    cells = [[side, f"{s['p50']:.1f}", f"{s['p95']:.1f}"] for side, s in f["sides"].items()]
    said = (
        f"{f['queries']} SciFact queries, k = {f['k']} → top {f['top_n']}, interleaved. Ratio of medians "
        f"(hand-written over engine) **{f['ratio']:.2f}** (above 1.00 the engine is faster); the top {f['top_n']} is "
        f"identical, ids and order, on {f['identical']} of {f['queries']} queries. {made(entry)}"
    )
    return table(["side", "p50 ms", "p95 ms"], "|---|---:|---:|", cells, said)


def concurrency(benches: Benches) -> str:
    entry = benches["concurrent_queries"]
    f = entry["figures"]
    ratio, merging = f["at_once"] / f["one_at_a_time"], f["per_query_call_s"] / f["merged_call_s"]
    calls = " and ".join(str(c) for c in f["calls_per_round"])
    text = (
        f"{f['queries']} distinct demo queries, k = {f['k']}, caches off, one at a time and {f['clients']} threads at "
        f"once, interleaved over {f['rounds']} rounds: one at a time {f['one_at_a_time']:.2f} queries/s, "
        f"{f['clients']} at once {f['at_once']:.2f} queries/s, **{ratio:.2f}×** (the 1.3× target: "
        f"{met(ratio, 1.3, below=False)}), {f['errors']} errors; the concurrent queries were scored in {calls} model "
        f"calls a round. The same {f['pairs']:,} pairs scored by the bare model as one call per query and as one call "
        f"for all: {f['per_query_call_s']:.2f} s against {f['merged_call_s']:.2f} s, **merging calls buys "
        f"{merging:.2f}×**."
    )
    if f["cores"]:
        rates = list(f["cores"].items())
        text += " The bare model, " + ", ".join(f"{name}: {rate:.1f} pairs/s" for name, rate in rates)
        if len(rates) == 3:
            (_, one), (_, every), (_, spread) = rates
            text += f" ({every / one:.2f}× from one thread to all; one query per core {spread / every:.2f}× of that)"
        text += "."
    return f"{text} {made(entry)}\n"


def batching(benches: Benches) -> str:
    entry = benches["batching_overhead"]
    f = entry["figures"]
    cells = [
        [f"{w['window_ms']:.0f} ms" + (" (the default)" if not w["window_ms"] else ""),
         (f"**{w['overhead_p50_ms']:.2f} ms**" if not w["window_ms"] else f"{w['overhead_p50_ms']:.2f} ms")
         + f" / {w['overhead_p95_ms']:.1f} ms", f"{w['requests_per_s']:.0f}",
         f"{w['requests_per_call']:.1f}"]
        for w in f["windows"].values()
    ]  # fmt: skip
    alone = next(w for w in f["windows"].values() if not w["window_ms"])["overhead_p50_ms"]
    said = (
        f"A stand-in model of {f['call_ms']:g} ms a call + {f['pair_ms']:g} ms a pair, 50 pairs a request, "
        f"{f['rounds']} interleaved rounds. A lone request's overhead at window 0: {alone:.2f} ms median (the 0.5 ms "
        f"target: {met(alone, 0.5)}). {made(entry)}"
    )
    header = ["window", "lone request: overhead median / p95", "8 clients: requests/s", "requests per model call"]
    return table(header, "|---|---:|---:|---:|", cells, said)


def app(benches: Benches) -> str:
    entry = benches["app_first_list"]
    f = entry["figures"]
    first, reranked = f["first_list"], f["reranked"]
    return (
        f"{f['queries']} sample queries typed in Chromium, k = {f['k']}, timed from the Enter key: **first-stage list "
        f"on screen p50 {first['p50']:,.0f} ms, p95 {first['p95']:,.0f} ms** (the 400 ms target: "
        f"{met(first['p50'], 400)}); reranked list on screen p50 {reranked['p50']:,.0f} ms, p95 "
        f"{reranked['p95']:,.0f} ms. {made(entry)}\n"
    )


def app_floor(benches: Benches) -> str:
    fastest, bare = benches["app_fastest"], benches["app_floor"]
    f, b = fastest["figures"], bare["figures"]
    return (
        f"The same {f['queries']} queries, k = {f['k']}, on the fastest backends this machine admits (the reranker on "
        f"`openvino-bf16`, the embedder on `openvino`): first-stage list on screen p50 {f['first_list']['p50']:,.0f} "
        f"ms, **reranked list p50 {f['reranked']['p50']:,.0f} ms**, p95 {f['reranked']['p95']:,.0f} ms (the 0.2 s "
        f"goal: {met(f['reranked']['p50'], 200)}). A bare Streamlit page (a text box, 50 Markdown rows, a History "
        f"expander; no model, no store), timed the same way: p50 {b['reranked']['p50']:,.0f} ms, p95 "
        f"{b['reranked']['p95']:,.0f} ms, what any Streamlit answer costs here before the engine does anything. "
        f"{made(fastest)} {made(bare)}\n"
    )


def http(benches: Benches) -> str:
    entry = benches["http_load"]
    f = entry["figures"]
    many, one = f["many"], f["one"]
    cells = [
        [label, str(p["requests"]), f"{p['p50']:.1f}", f"{p['p95']:.1f}", f"{p['max']:.1f}", f"{p['per_s']:.2f}",
         str(p["errors"])]
        for label, p in ((f"{f['clients']} at once", many), ("1", one))
    ]  # fmt: skip
    said = (
        f"top_k {f['top_k']}, k = {f['k']}, every request reranks. {f['clients']} clients get "
        f"{many['per_s'] / one['per_s']:.2f}× one client's throughput; their p50 is {many['p50'] / one['p50']:.1f}× "
        f"one client's. {made(entry)}"
    )
    header = ["clients", "requests", "p50 ms", "p95 ms", "max ms", "requests/s", "errors"]
    return table(header, "|---:|---:|---:|---:|---:|---:|---:|", cells, said)


def remote(benches: Benches) -> str:
    one, replicas = benches["remote_concurrency"], benches["remote_replicas"]
    f = one["figures"]

    def ratios(figures: dict[str, Any]) -> list[tuple[int, float, float, float]]:
        rows = []
        for level, wall in figures["levels"].items():
            ideal = figures["queries"] * figures["delay_ms"] / 1000 / int(level)
            rows.append((int(level), wall, ideal, wall / ideal))
        return rows

    cells = [[str(n), f"{wall:.2f} s", f"{ideal:.2f} s", f"{ratio:.2f}×"] for n, wall, ideal, ratio in ratios(f)]
    spread = ratios(replicas["figures"])
    worst = max(ratio for *_, ratio in ratios(f) + spread)
    same = "the same" if f["same"] and replicas["figures"]["same"] else "**not** the same"
    said = (
        f"{f['queries']} demo queries, k = {f['k']}, a server taking {f['delay_ms']:.0f} ms a request; with "
        f"one-at-a-time replicas named in one id: "
        + " / ".join(f"{wall:.2f} s" for _, wall, _, _ in spread)
        + " at "
        + " / ".join(str(n) for n, *_ in spread)
        + " replicas ("
        + " / ".join(f"{ratio:.2f}×" for *_, ratio in spread)
        + f" of the ideal). The figures were {same} at every level; the 1.3× goal: {met(worst, 1.3)} at every "
        f"level."
    )
    stopped = replicas["figures"].get("one_stopped")
    if stopped:
        said += (
            f" With {max(int(n) for n in replicas['figures']['levels'])} replicas and the first stopped halfway "
            f"through: {stopped['wall']:.2f} s, the figures {'the same' if stopped['same'] else '**not** the same'} "
            "(its requests went to the others; it was left out from then on)."
        )
    said += f" {made(one)} {made(replicas)}"
    return table(["searches at once", "wall time", "ideal", "ratio"], "|---:|---:|---:|---:|", cells, said)


def ray_overhead(benches: Benches) -> str:
    entry = benches["ray_overhead"]
    f = entry["figures"]
    cells = [
        ["here (one process, the model on both cores)", f"{f['here']:.2f} s", f"{f['pairs'] / f['here']:.1f}", "1.00×"],
        [f"Ray's workers ({f['workers']}, one core each)", f"{f['ray']:.2f} s", f"{f['pairs'] / f['ray']:.1f}",
         f"{f['ray'] / f['here']:.2f}×"],
    ]  # fmt: skip
    said = (
        f"{f['queries']} demo queries, k = {f['k']} ({f['pairs']:,} pairs), a cold score cache each round, "
        f"{f['rounds']} interleaved rounds, medians. Scores the same to the last digit: "
        f"{'yes' if f['same'] else '**no**'}. Ray's start and its workers' model loading, once per process: "
        f"{f['start']:.1f} s. {made(entry)}"
    )
    return table(["where the pairs are scored", "wall time", "pairs/s", "time against here"], "|---|---:|---:|---:|",
                 cells, said)  # fmt: skip


def infinity(benches: Benches) -> str:
    entry = benches["remote_infinity"]
    f = entry["figures"]
    alone = f["levels"]["1"]
    cells = [[level, f"{wall:.2f} s", f"{alone / wall:.2f}×"] for level, wall in f["levels"].items()]
    cells.append([f"the same model in the evaluating process ({f['local_backend']})", f"{f['local']:.2f} s", ""])
    same = "the same" if f["same"] else "**not** the same"
    said = (
        f"{f['queries']} demo queries, k = {f['k']}, {f['rounds']} interleaved rounds, medians. The figures were "
        f"{same} at every level; the largest gap to the local model's: {f['gap']:.1e}. {made(entry)}"
    )
    return table(["searches at once", "wall time", "against one at a time"], "|---:|---:|---:|", cells, said)


def embedding(benches: Benches) -> str:
    entry = benches["remote_embedding"]
    f = entry["figures"]
    local, service = f["rates"]["local"], f["rates"]["service"]
    return (
        f"{f['passages']} {f['corpus']} passages, {f['rounds']} interleaved rounds: the served vectors differ from the "
        f"local model's by at most **{f['gap']:.1e}**; the rate is {local:.1f} passages/s locally and {service:.1f}/s "
        f"through the service ({f['concurrency']} batches of {f['batch']} at once; {service / local:.2f}×). "
        f"{made(entry)}\n"
    )


def ingest_sort(benches: Benches) -> str:
    entry = benches["ingest_sort"]
    f = entry["figures"]
    units, together = f["rates"]["units"], f["rates"]["global"]
    return (
        f"{f['passages']:,} {f['corpus']} passages, embedding batches of {f['batch']}: units of {f['unit']} chunks in "
        f"corpus order compute {f['padded_units']:.3f} tokens per real token; one global length sort cut into the same "
        f"units, {f['padded_global']:.3f}: **{(1 - f['padded_global'] / f['padded_units']) * 100:.1f} % fewer tokens "
        f"computed**. The rate on {f['sample']} sampled passages, {f['rounds']} interleaved rounds: {units:.1f} "
        f"against {together:.1f} passages/s ({together / units:.2f}×). {made(entry)}\n"
    )


def embedding_backends(benches: Benches) -> str:
    entry = benches["embedding_backends"]
    f = entry["figures"]
    torch, openvino = f["rates"]["torch"], f["rates"]["openvino"]
    return (
        f"{f['sample']} of the {f['passages']:,} {f['corpus']} passages through `{f['model']}`, embedding batches of "
        f"{f['batch']}, the median of {f['rounds']} interleaved rounds: torch {torch:.1f} passages/s, "
        f"`WORKBENCH_EMBEDDING_BACKEND=openvino` (fp32) {openvino:.1f} (**{openvino / torch:.2f}×**); the largest "
        f"difference between their unit vectors {f['drift']:.1e}. {made(entry)}\n"
    )


def first_start(benches: Benches) -> str:
    entry = benches["first_start"]
    f = entry["figures"]
    what = {"app": "`workbench app` (Streamlit health answers)", "serve": "`workbench serve` (`/health` says ready)"}
    cells = [
        [what[command], f"{times['fresh machine']:.1f} s", f"{times['measured before']:.1f} s"]
        for command, times in f["starts"].items()
    ]
    said = (
        f"Medians of {f['rounds']} rounds; `workbench doctor` filled the measured cache in "
        f"{f['doctor_seconds']:.0f} s. {made(entry)}"
    )
    return table(["command", "fresh machine", "measured before"], "|---|---:|---:|", cells, said)


def first_audit(benches: Benches) -> str:
    """Fast by default: the backend each demo query ran on, from a fresh machine's first start."""
    entry = benches["first_audit"]
    f = entry["figures"]
    cells = [
        [str(r["query"]), f"{r['at_s']:.0f} s", r["backend"] + (" (measuring, auditing)" if r["checking"] else ""),
         f"{r['rerank_ms']:.0f}"]
        for r in f["queries"]
    ]  # fmt: skip
    switched = (
        f"**auto ran {f['final_backend']}, admitted by the audit, from {f['switched_s']:.0f} s** after the start"
        if f["switched_s"] is not None
        else f"auto still ran {f['final_backend']} when the bench stopped"
    )
    said = (
        f"`workbench serve` on a fresh machine (an empty data folder and user cache), ready after {f['ready_s']:.0f} "
        f"s, one demo query every {f['queries'][1]['at_s'] - f['queries'][0]['at_s']:.0f} s; no command typed: "
        f"{switched}; {f['on_faster']} of {len(f['queries'])} queries ran on it. {made(entry)}"
    )
    return table(["query", "at", "backend (/health)", "rerank ms"], "|---:|---:|---|---:|", cells, said)


def newcomer(benches: Benches) -> str:
    entry = benches["newcomer_walk"]
    f = entry["figures"]
    return (
        f"From the README's first command on a fresh clone (load {f['load']:.2f} on {entry['machine']['cores']} "
        f"cores; pip's download cache {f['pip_cache_mb']:,.0f} MB): the app answered after "
        f"{f['app_answering_s']:.0f} s (set-up, the app's start, the demo's build), the query box was on screen after "
        f"{f['query_box_s']:.0f} s, and **the first reranked answer after {f['reranked_list_s']:.0f} s** "
        f"({f['query_to_reranked_s']:.1f} s from Enter, the models loading). "
        + (
            f"Then, as the docs lead on: Evaluate with the page's defaults showed its verdict "
            f"**{f['evaluate_click_to_verdict_s']:.0f} s after the click** (its depth curve included); "
            f"their own Chroma folder, written by LangChain with the workbench's embedder "
            f"({f['own_folder_written_s']:.0f} s for 300 SciFact abstracts) and named in `workbench.toml` under a key "
            f"that differs from the collection's name, was listed by `workbench collections` in "
            f"{f['own_collections_listed_s']:.1f} s and answered its first reranked search in the running app "
            f"**{f['own_query_to_reranked_s']:.1f} s after Enter** (no restart). "
            if "own_query_to_reranked_s" in f
            else ""
        )
        + f"{made(entry)}\n"
    )


def cli(benches: Benches) -> str:
    entry = benches["cli_imports"]
    f = entry["figures"]["commands"]
    cells = [[f"`workbench {argv}`", f"{c['median']:.2f} s", f"{c['min']:.2f} s"] for argv, c in f.items()]
    chroma = f["collections"]["slowest"].get("chromadb")
    said = (
        f"`--help`: the 0.3 s goal {met(f['--help']['median'], 0.3)}; `collections` (the data folder with the demo "
        f"and SciFact): {met(f['collections']['median'], 0.3)}"
        + (f", of which importing `chromadb` alone takes {chroma:.2f} s" if chroma else "")
        + f". {made(entry)}"
    )
    return table(["command", "median", "min"], "|---|---:|---:|", cells, said)


def cli_summary(benches: Benches) -> str:
    entry = benches["cli_imports"]
    f = entry["figures"]["commands"]
    return (
        f"Imports before a command acts: `--help` {f['--help']['median']:.2f} s, `collections` "
        f"{f['collections']['median']:.2f} s. {made(entry)}\n"
    )


def explain(benches: Benches) -> str:
    entry = benches["explain_cost"]
    f = entry["figures"]
    calls = " or ".join(str(c) for c in f["calls"])
    return (
        f"On the demo ({f['explanations']} passages, each query's top reranked one): an explanation takes a median "
        f"{f['p50_ms']:.0f} ms (p95 {f['p95_ms']:.0f} ms) for a median {f['pairs']:.0f} pairs in {calls} model call, "
        f"{f['p50_ms'] / f['single_ms']:.1f}× scoring the pair alone ({f['single_ms']:.0f} ms). {made(entry)}\n"
    )


SUMMARISED = ("search_latency", "compare_pipeline", "concurrent_queries", "remote_concurrency", "http_load")


def summary(benches: Benches) -> str:
    s, p, c = (benches[name]["figures"] for name in SUMMARISED[:3])
    r, h = benches["remote_concurrency"]["figures"], benches["http_load"]["figures"]
    levels = r["levels"]
    cells = [
        [f"a warm SciFact query, k = {s['k']} → {s['top_n']} (`bench/search_latency.py`)",
         f"p50 {s['stages']['total']['p50'] / 1000:.1f} s, {s['stages']['rerank']['share']:.1f} % of it in the "
         f"cross-encoder (embed {s['stages']['embed']['p50']:.0f} ms, search {s['stages']['search']['p50']:.0f} ms)"],
        ["engine vs the hand-written pipeline (`bench/compare_pipeline.py`)",
         f"p50 ratio {p['ratio']:.2f}, identical top {p['top_n']} on {p['identical']} of {p['queries']} queries"],
        ["repeated query / top n change", f"{c['repeated_p50_ms']:.2f} ms / {c['top_n_change_p50_ms']:.2f} ms, "
         f"{c['top_n_change_calls']} model calls"],
        [f"{c['clients']} concurrent searches in one process (`bench/concurrent_queries.py`, demo, k = {c['k']})",
         f"{c['at_once']:.2f} vs {c['one_at_a_time']:.2f} queries/s one at a time "
         f"({c['at_once'] / c['one_at_a_time']:.2f}×), {c['errors']} errors; merging the same pairs into one model "
         f"call buys {c['per_query_call_s'] / c['merged_call_s']:.2f}×"],
        [f"an evaluation against a reranker service taking {r['delay_ms']:.0f} ms a request "
         "(`bench/remote_concurrency.py`, all 50 demo queries)",
         ", ".join(f"{level} at once {wall:.2f} s" for level, wall in levels.items())],
        [f"HTTP API, {h['clients']} clients × {h['per_client']} queries (`bench/http_load.py`, demo, k = {h['k']})",
         f"{h['many']['per_s']:.2f} req/s, p50 {h['many']['p50'] / 1000:.1f} s, p95 {h['many']['p95'] / 1000:.1f} s, "
         f"{h['many']['errors']} errors; one client alone: {h['one']['per_s']:.2f} req/s, p50 "
         f"{h['one']['p50'] / 1000:.2f} s"],
    ]  # fmt: skip
    entry = benches["search_latency"]
    m = entry["machine"]
    said = (
        f"Measured by `scripts/bench_figures.py` (each bench's own date in docs/performance.md), the last on "
        f"{max(benches[n]['measured_at'] for n in SUMMARISED)}: reranker backend torch:cpu, {m['cpu']} ({m['cores']} "
        f"cores, {m['vector']})."
    )
    return table(["what", "figure"], "|---|---|", cells, said)


def quantized(benches: Benches) -> str:
    """Issue 58: the audit's noise budget, int8's error layer by layer, and Explore's answer per backend."""
    entry = benches["quantized_backends"]
    f = entry["figures"]
    # each group's share of a layer's multiply FLOPs at the pairs' mean length (rerankers/local/ceiling.py's count)
    t, h, i = f["tokens"], f["hidden"], f["intermediate"]
    flops = {"attention Q, K, V": 6 * t * h * h, "attention output": 2 * t * h * h, "feed-forward up": 2 * t * h * i,
             "feed-forward down": 2 * t * h * i}  # fmt: skip
    layer = sum(flops.values()) + 4 * t * t * h
    budget = ", ".join(f"σ {sigma}: {share:.0%}" for sigma, share in f["budget"].items())
    cells = [
        [group, f"{flops[group] / layer:.0%}" if group in flops else "100%", f"{g['sigma']:.3f}",
         f"{g['largest']:.2f}", f"{g['changed']} of {f['queries']}",
         "within" if g["sigma"] <= f["allowed_sigma"] else f"**{g['sigma'] / f['allowed_sigma']:.1f}× over**"]
        for group, g in f["layers"].items()
    ]  # fmt: skip
    answers = f["explore_k50"]
    # Amdahl: the share of OpenVINO's time that must run in int8 for the answer to take half of torch's
    fp32, int8 = answers.get("openvino"), answers.get("openvino-int8")
    needed = (fp32 - answers["torch"] / 2) / (fp32 - int8) if fp32 and int8 and fp32 > int8 else None
    share = {group: work / layer for group, work in flops.items()}
    # the groups every mix with that much int8 work must hold (leaving one out leaves too little)
    required = [g for g in share if needed is not None and sum(share.values()) - share[g] < needed]
    over = bool(required) and all(f["layers"][g]["sigma"] > f["allowed_sigma"] for g in required)
    explore = "; ".join(f"{b} {t:.2f} s ({answers['torch'] / t:.2f}× torch)" for b, t in answers.items())
    quick = ", ".join(b for b, seconds in answers.items() if seconds < 0.5) or "none"
    said = (
        "The noise budget: Gaussian noise of σ added to fp32 torch's scores (which spread σ "
        f"{f['reference_sigma']:.2f}) changes the top 10 set of this share of the demo's {f['queries']} queries "
        f"(k = 20, mean of 200 draws): {budget}. The audit's 10 % allows σ ≤ {f['allowed_sigma']}. Int8 (NNCF's "
        "static recipe, the backend's calibration pairs) in one group of the six layers' matrix multiplies at a "
        "time, the rest fp32. "
        f"Explore's reranked answer at k = 50 (first stage and reranker, no score cache, median over {f['queries']} "
        f"queries × {f['rounds']} interleaved rounds): {explore}. Under the issue's 0.5 s: {quick} (the parity "
        f"table above says which the audit admits). "
        + (
            f"Twice torch's speed from int8 needs {needed:.0%} of the multiply work in int8 (Amdahl, from the "
            "openvino and openvino-int8 times above, time taken as proportional to the work), so every such mix "
            f"holds the {' and '.join(required) or 'no one'} group{'s' if len(required) > 1 else ''}, "
            + (
                "each over the budget alone: no int8 mix reaches 2× and stays faithful on this reranker and query set. "
                if over
                else "not each over the budget alone: a mix may pass; audit it. "
            )
            if needed is not None
            else ""
        )
        + made(entry)
    )
    return table(["int8 only in", "share of the multiply work", "score error σ", "largest", "top 10 set changed",
                  "against the budget"], "|---|---:|---:|---:|---:|---|", cells, said)  # fmt: skip


RENDERERS: dict[str, Callable[[Benches], str]] = {
    "bench-stages": stages, "bench-repeated": repeated, "bench-pipeline": pipeline, "bench-concurrency": concurrency,
    "bench-batching": batching, "bench-app": app,
    "bench-app-floor": app_floor, "bench-http": http, "bench-remote": remote,
    "bench-ray": ray_overhead,
    "bench-infinity": infinity, "bench-embedding": embedding, "bench-ingest-sort": ingest_sort,
    "bench-embedding-backends": embedding_backends,
    "bench-first-start": first_start, "bench-first-audit": first_audit, "bench-newcomer": newcomer, "bench-cli": cli,
    "bench-cli-summary": cli_summary,
    "bench-explain": explain, "bench-quantized": quantized,
    "bench-summary": summary,
}  # fmt: skip
