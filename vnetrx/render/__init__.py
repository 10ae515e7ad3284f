"""Renderers: what the core computed, as text (rich) or JSON. A trace, a replay, a sweep, a
diff, and the check reports (``lab``, ``observe``, ``verify``, ``xdp check``, ``kernels``); one
module per view, ``<command>_text`` and ``<command>_json``. Only this package (and the CLI) may
import rich, and the JSON modules do not."""

from __future__ import annotations
