# Devices file for the project's qemu-system-x86_64:
#   configure --with-devices-x86_64=dn2
# scripts/build-qemu.sh links it to <qemu>/configs/devices/x86_64-softmmu/dn2.mak.
#
# configure keeps "default devices" on, so every device QEMU builds by default
# for x86_64 is still built; the lines below make sure that what the project
# relies on stays on even in a build with --without-default-devices.
# Editing this file makes the next build re-run QEMU's meson by itself.

# Machines: q35 and pc (i440fx).
CONFIG_Q35=y
CONFIG_I440FX=y

# The DIMMnet-2 board (hw/dimmnet2).
CONFIG_DIMMNET2=y

# Guest-side plumbing used by the tests: virtio-net-pci, virtio-serial, ISA serial.
CONFIG_VIRTIO_PCI=y
CONFIG_VIRTIO_NET=y
CONFIG_VIRTIO_SERIAL=y
CONFIG_SERIAL_ISA=y
