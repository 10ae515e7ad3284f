"""What a real kernel showed, and how it was asked: the records and parsers the live checks
(vnetrx.live: a tap in a private netns, tracefs, root) and the lab (vnetrx.lab: QEMU guests)
share. Pure: text and values in, records out; nothing here touches the system, boots a guest,
or imports click or rich.

==========  =================================================================================
rx_event    one net_dev_rx_verbose_template event (napi_gro_receive_entry, …) and its parser
negotiated  a device's negotiated facts (``DeviceInfo``), the virtio feature bits by name, the
            hdr_len and receive mode they select
guest_log   a lab guest's serial log: status lines, tracepoint and kprobe lines, its version
tap_write   one write(2) into a tap fd (``WriteCase``) and what the kernel answered
            (``WriteResult``)
==========  =================================================================================
"""

from __future__ import annotations
