"""Checks against the kernel this machine runs: ``vnetrx verify tap``, ``vnetrx observe`` and
``--kernel running``.

``tap`` (a tap in a private network namespace), ``tracefs`` (a tracefs instance), ``bpf`` (an
XDP program) touch the system and need root; ``device`` (ioctls, sysfs) and ``running`` (uname,
/proc, /sys, BTF) read it. ``verify``, ``observe``, ``observe_parse``, ``observe_predict`` and
``parse`` are pure: they build the requests, read trace text, predict and compare, and import
none of those (``verify.run`` calls ``tap`` when the writes are made). What they share with the
lab is vnetrx.observed.

The GRO oracle (issue 26): ``gro`` writes TCP bursts (``gro_frames``, pure) into an IFF_NAPI
tap in a private network and mount namespace and reads what enters and leaves GRO with the
raw-tracepoint BPF programs of ``grobpf``; tools/gro_oracle.py records the case matrix into
tests/data/gro/linux-<release>.json.
"""
