"""``lab vhost``'s observed records next to vnetrx's predictions. Pure: the records (vhost_records)
and two prediction callables in, checks out; where the predictions come from (``vnetrx trace
--path vhost-tx --json`` and ``vnetrx replay --path vhost-rx --jsonl``) is the caller's business.

A TX prediction is the JSON document of ``trace --path vhost-tx`` for one frame: ``vhost.path``
("batch" | "tun_get_user"), ``skb`` (len, data_len, truesize, nr_frags, …: the skb after
eth_type_trans, as netif_receive_skb_entry shows it) and ``outcome`` (``drop``/``error`` when a
header is refused). An RX prediction is the list of ``replay --path vhost-rx --jsonl`` lines for
one case: ``used`` (each buffer's used length) and ``hdr`` (the header bytes vhost wrote, hex),
or ``"discarded": true``. A callable returns None when it has no prediction for that input."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from vnetrx.lab.vhost_records import UNTOUCHED

TxPredict = Callable[[Mapping[str, Any], str], "Mapping[str, Any] | None"]
RxPredict = Callable[[Mapping[str, Any], str], "Sequence[Mapping[str, Any]] | None"]
TX_SKB_FIELDS = ("len", "data_len", "truesize", "nr_frags")
REFUSED = ("drop", "error")  # a prediction's outcome words for a frame that makes no skb


@dataclass(frozen=True)
class Check:
    name: str
    predicted: object
    observed: object

    @property
    def ok(self) -> bool:
        return self.predicted == self.observed


@dataclass(frozen=True)
class Compared:
    """One TX frame or one RX case: its checks, or why there is no prediction."""

    kind: str  # "tx" | "rx"
    case: str
    index: int | None  # the TX frame within its case
    checks: tuple[Check, ...] = ()
    missing: str | None = None  # no prediction: why

    @property
    def match(self) -> bool:
        return self.missing is None and all(c.ok for c in self.checks)


@dataclass(frozen=True)
class Comparison:
    kernel: str
    results: tuple[Compared, ...] = field(default_factory=tuple)

    @property
    def compared(self) -> int:
        return sum(1 for r in self.results if r.missing is None)

    @property
    def mismatches(self) -> tuple[Compared, ...]:
        return tuple(r for r in self.results if r.missing is None and not r.match)


def _refused(observed: str) -> bool:
    return observed != "skb"


def compare_tx(record: Mapping[str, Any], predicted: Mapping[str, Any]) -> tuple[Check, ...]:
    """The road (when the guest saw one: a stalled chain never reached tun), then the skb or
    the refusal."""
    checks: list[Check] = []
    road = (predicted.get("vhost") or {}).get("path")
    if record["path"] is not None:
        checks.append(Check("path", road, record["path"]))
    if record.get("zerocopy") is not None:  # lab vhost --zcopy: were the pages pinned
        checks.append(Check("zcopy_used", (predicted.get("vhost") or {}).get("zcopy_used"),
                            record["zerocopy"]))
    outcome = str(predicted.get("outcome", ""))
    observed_refused = _refused(record["outcome"])
    if observed_refused or outcome in REFUSED:
        checks.append(Check("refused", outcome in REFUSED, observed_refused))
        return tuple(checks)
    skb = predicted.get("skb") or {}
    checks += [Check(f"skb.{name}", skb.get(name), (record["skb"] or {}).get(name))
               for name in TX_SKB_FIELDS]
    return tuple(checks)


def _hdr(observed: str, predicted: str) -> tuple[str, str]:
    """The header bytes vhost wrote. A prediction of fewer bytes than the probe's header (10:
    num_buffers not written, VERSION_1 without MRG_RXBUF before 6.14) is compared with the
    observed bytes when the rest of them are still the probe's 0xaa fill (vhost did not write
    them either); otherwise the whole of both. A 12-byte prediction against a header whose
    num_buffers is untouched compares the first 10 (num_buffers is not observable there)."""
    rest = observed[len(predicted):]
    if len(predicted) < len(observed) and rest and rest == UNTOUCHED * (len(rest) // 4) \
            and len(rest) % 4 == 0:
        return observed[:len(predicted)], predicted
    if observed.endswith(UNTOUCHED) and len(observed) == 24 and len(predicted) == 24:
        return observed[:20], predicted[:20]
    return observed, predicted


def compare_rx(record: Mapping[str, Any], predicted: Sequence[Mapping[str, Any]]
               ) -> tuple[Check, ...]:
    checks: list[Check] = []
    observed = record["lines"]
    checks.append(Check("packets", len(predicted), len(observed)))
    for i, (want, got) in enumerate(zip(predicted, observed, strict=False)):
        if want.get("discarded") or got.get("discarded"):
            checks.append(Check(f"[{i}].discarded", bool(want.get("discarded")),
                                bool(got.get("discarded"))))
            continue
        checks.append(Check(f"[{i}].used", list(want.get("used", [])), list(got["used"])))
        seen, wanted = _hdr(str(got["hdr"]), str(want.get("hdr", "")))
        checks.append(Check(f"[{i}].hdr", wanted, seen))
    return tuple(checks)


def compare(document: Mapping[str, Any], predict_tx: TxPredict | None,
            predict_rx: RxPredict | None) -> Comparison:
    """Every record of a ``lab vhost`` document against the predictions for its kernel (the
    upstream version the guest reported); a None callable: that direction is not predicted."""
    kernel = str(document["kernel"]["version"])
    results: list[Compared] = []
    for record in document["tx"]:
        name, index = str(record["case"]), int(record["index"])
        got = predict_tx(record, kernel) if predict_tx is not None else None
        if got is None:
            results.append(Compared("tx", name, index, missing="no vhost-tx prediction"))
        else:
            results.append(Compared("tx", name, index, compare_tx(record, got)))
    for record in document["rx"]:
        name = str(record["case"])
        lines = predict_rx(record, kernel) if predict_rx is not None else None
        if lines is None:
            results.append(Compared("rx", name, None, missing="no vhost-rx prediction"))
        else:
            results.append(Compared("rx", name, None, compare_rx(record, lines)))
    return Comparison(kernel, tuple(results))


def comparison_to_dict(comparison: Comparison) -> dict[str, Any]:
    return {
        "kernel": comparison.kernel,
        "compared": comparison.compared,
        "mismatches": len(comparison.mismatches),
        "results": [
            {"kind": r.kind, "case": r.case, "index": r.index, "match": r.match,
             "missing": r.missing,
             "checks": [{"name": c.name, "predicted": c.predicted, "observed": c.observed,
                         "ok": c.ok} for c in r.checks]}
            for r in comparison.results
        ],
    }
