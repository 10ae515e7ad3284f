"""``vnetrx lab``: boot a real guest kernel under QEMU, send it raw Ethernet frames over a
unix-domain datagram socket (no IP networking), and compare what its virtio-net driver built
with what vnetrx predicts.

Pure parts (cpio writer, module dependencies, /init script, offload frames, comparison) have
no I/O beyond reading the files they are given; the serial-log parser and the feature decoding
they share with the live checks are vnetrx.observed. ``vnetrx.lab.qemu`` runs QEMU (with
``vhost_user``, vnetrx's backend) and ``vnetrx.lab.run`` drives one boot. No click, no rich here.
"""
