"""``vnetrx lab``: boot a real guest kernel under QEMU, send it raw Ethernet frames over a
unix-domain datagram socket (no IP networking), and compare what its virtio-net driver built
with what vnetrx predicts.

Pure parts (cpio writer, module dependencies, /init script, serial-log parser, feature decoding,
comparison) have no I/O beyond reading the files they are given; ``vnetrx.lab.qemu`` runs QEMU.
No click, no rich here.
"""
