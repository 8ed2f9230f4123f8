"""K-fold cross-validation of the models of tables 4 and 5 of Shah et al. (2010).

:func:`cross_validate` splits a corpus into ``folds`` contiguous blocks of whole documents
(about the same number of tokens each), fits every model on the other folds (one set of
stage-1 counts shared by all of them; stage-2 hyperparameters chosen inside the training folds)
and scores the held-out fold:

* table 5: ``unigram``, ``M_baseline``, ``M_ind``, ``M_uni``, ``M_full`` with A1/A2/E1/E2
  (micro-averaged over all held-out tokens) and the E1 of each fold;
* table 4: for every label element, the accuracy of the unigram choice (most frequent value
  for the token), of the per-LE model ``M_e`` (its own candidates: the values of the LE among
  ``C(t)``) and of ``M_full``'s label;
* the coverage upper bound (gold label among the candidates) with lexicon candidates only
  (eq. 9) and with the suffix guesser's candidates of unknown tokens;
* the time spent fitting and tagging;
* ``known_guesses``, ``graded`` and ``unknown_weights`` as resolved in each fold (with
  ``"inner"``: chosen on an inner split of
  the fold's training part, never on the held-out fold; the inner E1 of both settings).
"""
from __future__ import annotations

import time
import numpy as np

from .data import LabelScheme, corpus_from_sentences, corpus_vocalised, sentence_documents
from .metrics import evaluate
from .model import check_sentences
from .prediction import predict_labels
from .training import train

__all__ = ["TABLE5", "fold_indices", "cross_validate", "format_report"]

#: the models of table 5, in the paper's order
TABLE5 = ("M_full", "M_uni", "M_baseline", "M_ind", "unigram")


def fold_indices(sentences, folds: int) -> list[list[int]]:
    """Sentence indices of each fold: contiguous blocks of whole documents with about
    ``len(tokens) / folds`` tokens each (a document larger than a fold's share is cut)."""
    if isinstance(folds, bool) or not isinstance(folds, (int, np.integer)) or folds < 2:
        raise ValueError(f"folds must be an integer >= 2, not {folds!r}")
    if len(sentences) < folds:
        raise ValueError(f"{len(sentences)} sentences cannot make {folds} folds")
    docs = sentence_documents(sentences)
    sizes = [len(s) for s in sentences]
    total = sum(sizes)
    out: list[list[int]] = [[] for _ in range(folds)]
    done = 0
    k = 0
    for i, s in enumerate(sentences):
        new_doc = i == 0 or docs[i] != docs[i - 1]
        target = total * (k + 1) / folds
        # move on at a document boundary once the fold has its share, or anywhere once the
        # fold is far over its share; always leave a sentence for every later fold
        left = len(sentences) - i
        if k < folds - 1 and out[k] and (
                (new_doc and done >= target - sizes[i] / 2) or done >= target + total / folds / 2
                or left <= folds - 1 - k):
            k += 1
        out[k].append(i)
        done += sizes[i]
    return out


def cross_validate(sentences, folds: int = 10, *, progress=None, **params) -> dict:
    """Cross-validate every model of tables 4 and 5 (see the module docstring).

    ``params``: the keyword arguments of :func:`fastspectral.lexical.training.train` (``features``,
    ``C``, ``epsilon``, ``split``, ``refit``, ``frequency_classes``, ``unknown``, ``analyser``,
    ``max_iter``, ``random_state``, ``vocalised``, ``known_guesses``, ``graded``,
    ``unknown_weights``).  ``progress(fold, folds)`` is called after
    each fold.  Returns a dict (see :func:`format_report`)."""
    sentences = check_sentences(sentences, labelled=True)
    vocalised = params.pop("vocalised", "auto")
    voc = corpus_vocalised(sentences) if vocalised == "auto" else vocalised == "yes"
    params["vocalised"] = "yes" if voc else "no"
    whole = corpus_from_sentences(sentences, voc)
    scheme = LabelScheme.from_labels(set(whole.labels), voc)
    names = scheme.names
    parts = fold_indices(sentences, folds)
    models = TABLE5
    firsts = {m: [] for m in models}
    seconds = {m: [] for m in models}
    gold_all: list = []
    le_first = {n: [] for n in names}
    le_unigram = {n: [] for n in names}
    cov_lex = cov_all = 0
    covered: list = []
    fold_e1 = {m: [] for m in models}
    fit_time = tag_time = 0.0
    n_train_tokens = 0
    kg_folds: list = []
    for f, test_ids in enumerate(parts):
        test_set = set(test_ids)
        train_sents = [s for i, s in enumerate(sentences) if i not in test_set]
        test_sents = [sentences[i] for i in test_ids]
        t0 = time.perf_counter()
        learned = train(train_sents, rankers=("M_full", "M_uni", "M_baseline", "M_morph") +
                        tuple(f"M_e:{n}" for n in learned_names(train_sents, voc)),
                        with_morph=True, **params)
        fit_time += time.perf_counter() - t0
        kg_folds.append({"known_guesses": bool(learned.known_guesses),
                         "inner_E1": learned.known_guesses_scores,
                         "graded": learned.graded, "graded_inner_E1": learned.graded_scores,
                         "unknown_weights": bool(learned.unknown_weights),
                         "unknown_weights_inner_E1": learned.unknown_weights_scores})
        n_train_tokens += sum(len(s) for s in train_sents)
        test = corpus_from_sentences(test_sents, voc)
        t0 = time.perf_counter()
        predict_labels(learned, test, ["M_full"], analyser=params.get("analyser"))
        tag_time += time.perf_counter() - t0
        le_models = [f"M_e:{n}" for n in learned.scheme.names]
        out = predict_labels(learned, test, list(models) + le_models,
                             analyser=params.get("analyser"))
        gold = test.labels
        gold_all.extend(gold)
        for m in models:
            firsts[m].extend(out[m][0])
            seconds[m].extend(out[m][1])
            fold_e1[m].append(100.0 * (1 - np.mean([g == p for g, p in zip(gold, out[m][0])])))
        lex_words = set(learned.fs.vocabs[0])
        for g, c, t in zip(gold, out["_candidates"], test.tokens):
            covered.append(g in c)
            if g in c:
                cov_all += 1
                if t in lex_words or t.lower() in lex_words:
                    cov_lex += 1
        # table 4: per-LE models, with the global scheme's LE names
        full_first = out["M_full"][0]
        for k, n in enumerate(names):
            if f"M_e:{n}" in out:
                le_first[n].extend(out[f"M_e:{n}"][0])
            else:   # the LE does not vary in this fold's training data
                le_first[n].extend(scheme.elements(p)[k] for p in full_first)
            le_unigram[n].extend(scheme.elements(p)[k] for p in out["unigram"][0])
        if progress is not None:
            progress(f + 1, len(parts))
    n = len(gold_all)
    table5 = {}
    cov_idx = [i for i, c in enumerate(covered) if c]
    for m in models:
        sc = evaluate(gold_all, firsts[m], seconds[m], scheme)
        cc = evaluate([gold_all[i] for i in cov_idx], [firsts[m][i] for i in cov_idx],
                      [seconds[m][i] for i in cov_idx]) if cov_idx else None
        table5[m] = {"A1": sc.a1, "A2": sc.a2, "E1": sc.e1, "E2": sc.e2,
                     "E1_covered": cc.e1 if cc else None, "E2_covered": cc.e2 if cc else None,
                     "fold_E1": fold_e1[m], "per_le": sc.per_le}
    table4 = {}
    gold_le = [scheme.elements(g) for g in gold_all]
    for k, name in enumerate(names):
        g = [e[k] for e in gold_le]
        table4[name] = {
            "values": len(set(g)),
            "unigram": float(np.mean([a == b for a, b in zip(g, le_unigram[name])])),
            "M_e": float(np.mean([a == b for a, b in zip(g, le_first[name])])),
            "M_full": table5["M_full"]["per_le"][name],
        }
    return {"folds": len(parts), "tokens": n, "sentences": len(sentences),
            "vocalised": voc, "label_elements": names, "table5": table5, "table4": table4,
            "coverage_lexicon": cov_lex / n, "coverage": cov_all / n,
            "fit_seconds": fit_time, "tag_seconds": tag_time,
            "train_tokens_per_s": n_train_tokens / fit_time if fit_time else None,
            "tag_tokens_per_s": n / tag_time if tag_time else None,
            "labels": len(set(gold_all)),
            "known_guesses_folds": kg_folds,
            "params": {k: v for k, v in params.items() if k != "analyser"}}


def learned_names(train_sents, voc) -> list:
    """The LE names of a training part (those the per-LE models can be fitted for)."""
    labels = set()
    for s in train_sents:
        for i in range(len(s)):
            labels.add((s.lemmas[i], s.upos[i], s.xpos[i], s.feats[i],
                        s.words[i] if voc else ""))
    return LabelScheme.from_labels(labels, voc).names


def format_report(res: dict, per_le: bool = True) -> str:
    """The text report of :func:`cross_validate`: table 5 (one line per model: name, E1,
    E2, A1, A2), coverage, speed and, with ``per_le``, table 4."""
    lines = [f"{res['folds']}-fold cross-validation: {res['tokens']} tokens, "
             f"{res['sentences']} sentences, {res['labels']} distinct labels"]
    lines.append(f"{'model':<12} {'E1':>6} {'E2':>6} {'A1':>7} {'A2':>7}  "
                 f"{'E1cov':>6} {'E2cov':>6}  E1 per fold (min-max)")
    for m in TABLE5:
        r = res["table5"][m]
        fe = r["fold_E1"]
        e1c = "-" if r["E1_covered"] is None else f"{r['E1_covered']:.2f}"
        e2c = "-" if r["E2_covered"] is None else f"{r['E2_covered']:.2f}"
        lines.append(f"{m:<12} {r['E1']:6.2f} {r['E2']:6.2f} {100 * r['A1']:6.2f}% "
                     f"{100 * r['A2']:6.2f}%  {e1c:>6} {e2c:>6}  {min(fe):.1f}-{max(fe):.1f}")
    lines.append("E1cov / E2cov: the error rates on the tokens whose gold label is among their "
                 "candidates (the paper's setting: choosing among SAMA's analyses)")
    lines.append(f"coverage upper bound: {100 * res['coverage_lexicon']:.2f}% (training "
                 f"lexicon, eq. 9), {100 * res['coverage']:.2f}% (with the suffix guesser)")
    kg = res.get("known_guesses_folds") or []
    if kg:
        line = f"known_guesses per fold: {''.join('y' if k['known_guesses'] else 'n' for k in kg)}"
        inner = [k["inner_E1"] for k in kg if k.get("inner_E1")]
        if inner:
            line += " (chosen on inner splits of the training folds; inner E1 of M_full no/yes: " \
                + ", ".join(f"{k['no']:.2f}/{k['yes']:.2f}" for k in inner) + ")"
        lines.append(line)
        if any("graded" in k for k in kg):
            line = "graded targets per fold: " + " ".join(k["graded"] for k in kg)
            inner = [k["graded_inner_E1"] for k in kg if k.get("graded_inner_E1")]
            if inner:
                opts = [o for o in inner[0] if o != "tokens"]
                line += f" (inner E1 of M_full {'/'.join(opts)}: " + ", ".join(
                    "/".join(f"{k[o]:.2f}" for o in opts) for k in inner) + ")"
            lines.append(line)
            line = "unknown_weights per fold: " + "".join(
                "y" if k["unknown_weights"] else "n" for k in kg)
            inner = [k["unknown_weights_inner_E1"] for k in kg
                     if k.get("unknown_weights_inner_E1")]
            if inner:
                line += " (inner E1 of M_full no/yes: " + ", ".join(
                    f"{k['no']:.2f}/{k['yes']:.2f}" for k in inner) + ")"
            lines.append(line)
    tr = res["train_tokens_per_s"]
    tg = res["tag_tokens_per_s"]
    lines.append(f"time: fitting every model {res['fit_seconds']:.1f} s "
                 f"({tr:,.0f} training tokens/s), tagging with M_full {res['tag_seconds']:.2f} s "
                 f"({tg:,.0f} tokens/s)")
    if per_le:
        lines.append("")
        lines.append(f"{'label element':<16} {'values':>6} {'unigram':>8} {'M_e':>8} "
                     f"{'M_full':>8}   (accuracy %)")
        for name, r in res["table4"].items():
            lines.append(f"{name:<16} {r['values']:6d} {100 * r['unigram']:8.2f} "
                         f"{100 * r['M_e']:8.2f} {100 * r['M_full']:8.2f}")
    return "\n".join(lines)

