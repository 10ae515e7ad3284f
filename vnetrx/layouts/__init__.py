"""Binary layouts defined with Construct. Construct stays inside this package: the rest of vnetrx
sees typed ``Layout``/``Field`` records and plain dicts."""

from __future__ import annotations
