#!/usr/bin/env bash
# TAP: dsh (the DIMMnet Shell, tools/dsh) in a Linux guest whose board is
# cabled to itself (loopback=on: LID 1).  One guest runs
#   1. a dsh script through /dev/mem: bring-up, the thesis's worked example
#      (App. C: prim VS ... prints cmd:60000000400_20000000008, then
#      Controller Status reads 0x832), ww_write + VS + VL + pw_read,
#      llcm_write/llcm_read, rllcm_write to its own LID, the receive-status
#      ring, the register decoders;
#   2. a script of bad commands (each must give an error, none a crash);
#   3. dsh through the driver (-d /dev/dimmnet2-0), with the module of this
#      tree (linux-guest/driver/build.sh builds it, cached; without the guest
#      kernel's headers these checks are skipped, and fail when CI is set).
# The outputs are checked here with grep.
#
#   tests/guest/dsh-test.sh      (meson: test 'guest-dsh'; $DN2_DSH = dsh)
#
# Environment: DN2_DSH (the static dsh; default build/tools/dsh/dsh),
# DN2_DSH_KO (the driver module; default: the one linux-guest/driver/build.sh
# builds; empty: no driver checks), DN2_BOOT_TIMEOUT (guest seconds, default 150), plus what
# scripts/run-guest.sh reads.  Console log: build/guest/logs/dsh-test.log.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/../../scripts/lib.sh"
. "$here/../tap/tap-lib.sh"
dn2_no_options "$@"

prog=${DN2_DSH:-$DN2_TOP/build/tools/dsh/dsh}
log=$DN2_TOP/build/guest/logs/dsh-test.log
mkdir -p "$(dirname "$log")"
if [ ! -x "$prog" ]; then
    tap_plan 1
    not_ok "$prog not built (run: meson compile -C build)"
    tap_done
fi
# The driver module: DN2_DSH_KO, else this tree's (cached build).  When it
# cannot be had, drv_why says why (and drv_fail that it is a failure, not
# a missing tool).
drv_why='' drv_fail=''
if [ -n "${DN2_DSH_KO+set}" ]; then
    ko=$DN2_DSH_KO
    [ -z "$ko" ] || [ -f "$ko" ] || drv_why="DN2_DSH_KO=$ko does not exist"
else
    ko=$(bash "$DN2_TOP/linux-guest/driver/build.sh" 2> "$log.kbuild")
    case $? in
        0|2) ;;
        4) ko=-; drv_why=$(tap_missing "the guest kernel's headers" "$(dn2_kernel_headers_pkg)") ;;
        *) ko=-; drv_fail=1; drv_why="dimmnet2.ko did not build (build/guest/driver/build.log)" ;;
    esac
fi
extra=$(mktemp -d)
trap 'rm -rf "$extra"' EXIT
mkdir -p "$extra/bin" "$(dirname "$log")"
cp "$prog" "$extra/bin/dsh"
have_drv=
if [ -z "$drv_why" ] && [ -n "$ko" ] && [ -f "$ko" ]; then
    cp "$ko" "$extra/dimmnet2.ko"
    have_drv=1
fi

# ------------------------------------------------ what the guest runs
cat > "$extra/dsh-mem.dsh" <<'EOF'
# Bring-up through the System Register (thesis order)
v
sreg_write ctl_reset 1
sreg_write sdimm_capacity 1
sreg_write sdimm_init 1
wait sdimm
sreg_write mtu 8
wait link
sreg_read sma_lid
sreg_write lid 1
sreg_write pgid0 42
sreg_write pgid1 42
# The thesis's worked example: a VS from WW#0, then its VS from WW#2
ww_write ww=0 from=0 it=128 val=0x11110000 inc=1
prim VS dt=0 it=0 dw=0 dl=0 ef=0 size=0x200 src=0 dst=0
wait vs 0
ww_write ww=2 from=0 it=128 val=0x22220000 inc=1
prim VS dt=0 it=0 dw=0 dl=0 ef=0 size=0x200 src=0x400 dst=0x600
wait vs 2
ureg_read ctl_status
ureg_read prim_counter
# DTYPE lands in Lower [7:5] (NOP: the board ignores it)
prim NOP dt=2 it=0 dw=0 dl=0 ef=0 size=0x200 src=0x400 dst=0x600
# Read it back: VL into Prefetch Window #1
prim VL size=0x200 src=0x600 dst=0x200 dt=0 it=0 dw=0 dl=0 ef=0
wait pw 1
pw_read 1 64
ureg_read pw_flag
ureg_write prim_counter_reset 1
ureg_read prim_counter
# LLCM (thesis Fig. C.6)
llcm_write from=0 it=10 val=0xaaaa0000 inc=1
llcm_read 0 64
# rllcm_write to our own LID (loopback), then read our LLCM
ureg_write pkt_counter_reset 1
rllcm_write 1 0x100 0x1122334455667788
wait pkt 1
llcm_read 0x100 16
ureg_read pkt_counter
ureg_read prim_counter
# Receive status: an RVS to ourselves with eflag
ureg_write status_initial_addr 0x7000
ureg_write status_area_size 0x10
prim RVS dt=0 it=0 dw=0 dl=1 ef=1 size=0x40 src=0x600 dst=0x3000
wait status
ureg_read status_nwa
status
status
dump sodimm 0x3000 64
ureg_read module_state
ureg_read evpbuf_nwa
evpbuf_read 0 32
ww_read 2 16
sreg_write clt_reset 1
ureg_read ctl_status
info
q
llcm_read 0 8
EOF

cat > "$extra/dsh-bad.dsh" <<'EOF'
foo
prim VS dt=0 it=0
prim XYZ dt=0 it=0 dw=0 dl=0 ef=0 size=0 src=0 dst=0
prim VS dt=9 it=0 dw=0 dl=0 ef=0 size=0 src=0 dst=0
prim VS dt=0 it=0 dw=0 dl=0 ef=0 size=0 src=0 dst=0 bogus=1
prim VS dt=0 dt=1 it=0 dw=0 dl=0 ef=0 size=0 src=0 dst=0
prim VS dt=0 it=0 dw=0 dl=0 ef=0 size=0 src=0 dst
llcm_read 0x8000 16
llcm_read abc 16
llcm_read 55ff 8
pw_read 7 64
pw_read 0
ureg_read nothing
ureg_write status_nra
sreg_read ctl_reset
sreg_write lid
sreg_write frobnicate 1
ww_write ww=0 from=0 it=1 val=1 inc=1 it=2
ww_write ww=0 from=0x800 it=1 val=1 inc=1
llcm_write from=0 it=1 val=-1 inc=0
rllcm_write 1
wait forever
wait count XYZ 1
dump sodimm
;;; ;
v
EOF

cat > "$extra/dsh-drv.dsh" <<'EOF'
info
ureg_read ctl_status
llcm_write from=0x100 it=4 val=0x5a5a0000 inc=1
llcm_read 0x100 16
ww_write ww=1 from=0 it=16 val=0x33330000 inc=1
prim VS dt=0 it=0 dw=0 dl=0 ef=0 size=0x40 src=0x200 dst=0x5000
wait vs 1
prim VL dt=0 it=0 dw=0 dl=0 ef=0 size=0x40 src=0x5000 dst=0x400
wait pw 2
pw_read 2 32
EOF

cat > "$extra/dsh-guest.sh" <<'EOF'
echo DSH-MEM-BEGIN
dsh 2 1 0 < /dsh-mem.dsh 2>&1
echo "DSH-MEM-END rc=$?"
echo DSH-BAD-BEGIN
dsh -q < /dsh-bad.dsh 2>&1
echo "DSH-BAD-END rc=$?"
echo DSH-C-BEGIN
dsh -c 'ureg_read ctl_status; sreg_read sma_lid ; h prim' 2>&1
echo "DSH-C-END rc=$?"
if [ -f /dimmnet2.ko ]; then
    echo DSH-DRV-BEGIN
    # The script above ended with a Controller Reset: SO-DIMM on again.
    dsh -q -c 'sreg_write sdimm_capacity 1; sreg_write sdimm_init 1' >/dev/null 2>&1
    if ! insmod /dimmnet2.ko 2>&1; then
        echo DSH-DRV-INSMOD-FAILED
    else
        dsh -d /dev/dimmnet2-0 < /dsh-drv.dsh 2>&1
        echo "DSH-DRV-RC rc=$?"
        dsh -d /dev/dimmnet2-0 -c 'sreg_read sma_lid' 2>&1
        echo "DSH-DRV-SREG rc=$?"
    fi
    echo DSH-DRV-END
fi
exit 0
EOF

# ------------------------------------------------------------ the guest
out=$(DN2_GUEST_EXTRA=$extra bash "$DN2_TOP/scripts/run-guest.sh" -r 'sh /dsh-guest.sh' \
      -t "${DN2_BOOT_TIMEOUT:-150}" -l "$log" \
      -- -global dimmnet2.loopback=on 2>"$log.run-guest")
rc=$?
printf '%s\n' "$out" > "$log.out"

# ------------------------------------------------------------ checks
section() { # section NAME: the lines between DSH-NAME-BEGIN and DSH-NAME-END
    printf '%s\n' "$out" | sed -n "/^DSH-$1-BEGIN\$/,/^DSH-$1-END/p"
}
mem=$(section MEM)
bad=$(section BAD)
cmdc=$(section C)
drv=$(section DRV)
has() { # has TEXT-VAR EXTENDED-REGEX
    grep -Eq -- "$2" <<< "$1"
}
count() { # count TEXT-VAR EXTENDED-REGEX
    grep -Ec -- "$2" <<< "$1"
}

plan=36
[ -n "$ko" ] && plan=$((plan + 5))
tap_plan $plan
result $([ $rc -eq 0 ] && [ -n "$mem" ]; echo $?) "guest booted, ran the dsh scripts and powered off (run-guest.sh status $rc)"
if [ -z "$mem" ]; then
    diag "no dsh output; tail of the console log ($log):"
    tail -20 "$log" 2>/dev/null | diag
    tail -10 "$log.run-guest" 2>/dev/null | diag
fi

# 1. /dev/mem session
result $(has "$mem" '^DIMMnet-2 Shell version 2\.1a'; echo $?) "v prints 'DIMMnet-2 Shell version 2.1a'"
result $(has "$mem" '^dsh > sreg_write ctl_reset 1$' && has "$mem" '^####### Controller Reset #######$'; echo $?) \
   "commands from a file are echoed after 'dsh > '; sreg_write ctl_reset"
result $(has "$mem" '^SO-DIMM ready$' && has "$mem" '^256 MiB per module$' && has "$mem" '^2048 bytes$'; echo $?) \
   "bring-up: sdimm_capacity (256 MiB), sdimm_init, wait sdimm, mtu (2048)"
result $(has "$mem" '^####### Get LID from sma #######$' && has "$mem" '^#[0-9a-f]{8,}: 0000000000030001$' \
     && has "$mem" '^LID  : 1 ' && has "$mem" '^link : 11 \(ready\)$'; echo $?) \
   "sreg_read sma_lid: 0x30001 decoded as LID 1, link ready"
result $(has "$mem" '^LID 1 \(0x0001, CLID 0x001\)$' && has "$mem" '^PGID 42 for WID 0$' && has "$mem" '^PGID 42 for WID 1$'; echo $?) \
   "sreg_write lid / pgid0 / pgid1"
result $(grep -xq 'cmd:60000000400_20000000008' <<< "$mem"; echo $?) \
   "the thesis's 'prim VS dt=0 it=0 dw=0 dl=0 ef=0 size=0x200 src=0x400 dst=0x600' prints cmd:60000000400_20000000008"
result $(grep -xq 'cmd:0_20000000008' <<< "$mem"; echo $?) "prim VS src=0 dst=0 prints cmd:0_20000000008"
result $(has "$mem" '^WW#0: write to SO-DIMM complete$' && has "$mem" '^WW#2: write to SO-DIMM complete$'; echo $?) \
   "wait vs 0 / wait vs 2"
result $(has "$mem" '^#[0-9a-f]{8,}: 0000000000000832$'; echo $?) \
   "ureg_read ctl_status reads 0x832 after the VSs from WW#0 and WW#2 (the thesis's dump)"
result $(has "$mem" '^  bit 1 +SO-DIMM initialised$' && has "$mem" '^  bit 4 +status area empty$' \
     && has "$mem" '^  bit 5 +WW#0: write to SO-DIMM complete$' && has "$mem" '^  bit 11 +WW#2: write to SO-DIMM complete$'; echo $?) \
   "ctl_status decoded: bits 1, 4, 5, 11"
result $(has "$mem" '^VS    : 2$' && has "$mem" '^BOTF  : 0$'; echo $?) "ureg_read prim_counter decodes VS : 2"
result $(grep -xq 'cmd:60000000400_20000000040' <<< "$mem"; echo $?) "prim NOP dt=2 puts DTYPE in Lower [7:5] (cmd:60000000400_20000000040)"
result $(grep -xq 'cmd:20000000600_20000000004' <<< "$mem"; echo $?) "prim VL with its fields in another order (cmd:20000000600_20000000004)"
result $(has "$mem" '^PW#1: all lines in$' && has "$mem" '^#[0-9a-f]{8,}: 2222000122220000 2222000322220002$' \
     && has "$mem" '^#[0-9a-f]{8,}: 2222000922220008 2222000b2222000a$'; echo $?) \
   "wait pw 1 + pw_read 1 64 shows the data the VS wrote (0x22220000...)"
result $(has "$mem" '^PW#1  : 1111  all lines in$'; echo $?) "ureg_read pw_flag decodes per window"
result $(has "$mem" '^####### Primitive Counter Reset #######$' && has "$mem" '^#[0-9a-f]{8,}: 0000000000000000$'; echo $?) \
   "ureg_write prim_counter_reset 1 clears the counter"
result $(has "$mem" '^#[0-9a-f]{8,}: aaaa0001aaaa0000 aaaa0003aaaa0002$' && has "$mem" '^#[0-9a-f]{8,}: aaaa0009aaaa0008 [0-9a-f]{16}$'; echo $?) \
   "llcm_write from=0 it=10 val=0xaaaa0000 inc=1 then llcm_read 0 64 (thesis Fig. C.6)"
result $(has "$mem" '^# ADDR +7 6 5 4 3 2 1 0 F E D C B A 9 8$'; echo $?) "dumps have the thesis's header line"
result $(has "$mem" '^packets received: 1$'; echo $?) "rllcm_write 1 0x100 ...: the BOTF came back through the loopback cable (wait pkt 1)"
result $(has "$mem" '^#[0-9a-f]{8,}: 1122334455667788 '; echo $?) "llcm_read 0x100 shows the 8 bytes rllcm_write sent"
result $(has "$mem" '^BOTF  : 1$'; echo $?) "the BOTF counter counted the rllcm_write"
result $(has "$mem" '^status ring at LLCM 0x7000' && has "$mem" '^1024 bytes \(64 records\)$'; echo $?) \
   "ureg_write status_initial_addr / status_area_size"
result $(has "$mem" '^  RVS from CLID 0x001 \(LID 1\) WID 0: 64 bytes, first address 0x3000'; echo $?) \
   "status: the RVS's receive-status record, decoded"
result $(has "$mem" '^status: none '; echo $?) "status: an empty ring says so"
result $(has "$mem" '^#00003000: 2222000122220000 2222000322220002$'; echo $?) \
   "dump sodimm 0x3000 64 (VL through PW#3) shows the data the RVS wrote"
result $(has "$mem" '^  Executer : P_IDLE$' && has "$mem" '^####### Module Status #######$'; echo $?) "ureg_read module_state decodes"
result $(has "$mem" '^tail : 0x000 \(entry 0\)$' && has "$mem" '^tail : 0x7010'; echo $?) "ureg_read evpbuf_nwa / status_nwa"
result $(has "$mem" '^#[0-9a-f]{8,}: 2222000122220000 2222000322220002$' && has "$mem" '^dsh > ww_read 2 16$'; echo $?) \
   "ww_read 2 16 (extension)"
result $(has "$mem" '^dsh > sreg_write clt_reset 1$' && [ "$(count "$mem" '^####### Controller Reset #######$')" = 2 ] \
     && has "$mem" '^#[0-9a-f]{8,}: 0000000000000010$'; echo $?) \
   "sreg_write clt_reset (the thesis's spelling) resets: Controller Status 0x10"
result $(has "$mem" '^dsh: /dev/mem at 0xfec10000 .*WID 0; total procs 2, own PID 1$'; echo $?) "info"
result $(has "$mem" '^DSH-MEM-END rc=0$' && ! has "$mem" 'error:' && ! has "$mem" '^dsh > llcm_read 0 8$'; echo $?) \
   "no command of the script failed; q ends it (exit status 0)"

# 2. bad input
errs=$(count "$bad" '^dsh: .*: error: ')
result $([ "$errs" -ge 23 ]; echo $?) "23 bad commands give $errs errors"
result $(has "$bad" '^dsh: foo: error: unknown command \(h for help\)$' \
     && has "$bad" 'prim: error: missing field\(s\): dw= dl= ef= size= src= dst=' \
     && has "$bad" "prim: error: unknown primitive 'XYZ'" \
     && has "$bad" 'prim: error: dt: 9 is out of range' \
     && has "$bad" "prim: error: unknown field 'bogus'" \
     && has "$bad" 'prim: error: field dt= given twice' \
     && has "$bad" 'llcm_read: error: 0x8000 \+ 0x10 runs past the end of the LLCM' \
     && has "$bad" "llcm_read: error: Offset: 'abc' is not a number" \
     && has "$bad" "llcm_read: note: Offset: '55ff' read as 55" \
     && has "$bad" 'sreg_read: error: unknown option .ctl_reset.' \
     && has "$bad" 'wait: error: unknown condition .forever.'; echo $?) \
   "the errors name the problem (unknown command, missing/unknown/duplicate field, range, not a number)"
result $(has "$bad" '^DIMMnet-2 Shell version 2\.1a' && has "$bad" '^DSH-BAD-END rc=1$'; echo $?) \
   "dsh survives them all (the last command runs) and exits with status 1"
result $(has "$cmdc" '^####### Controller Status #######$' && has "$cmdc" '^####### Get LID from sma #######$' \
     && has "$cmdc" '^prim +: Issue a Primitive' && has "$cmdc" '^DSH-C-END rc=0$'; echo $?) \
   "dsh -c 'cmd; cmd; cmd' (and 'h prim')"

# 3. the driver
drv_points=("driver: info" "driver: llcm" "driver: VS/VL" "driver: no failure" "driver: sreg_read refused")
if [ -n "$drv_why" ]; then
    for d in "${drv_points[@]}"; do
        if [ -n "$drv_fail" ]; then not_ok "$d ($drv_why)"; else skip "$d" "$drv_why"; fi
    done
elif [ -n "$have_drv" ] && has "$drv" '^DSH-DRV-INSMOD-FAILED$'; then
    for d in "${drv_points[@]}"; do
        skip "$d" "insmod $ko failed in the guest (stale module? linux-guest/driver/build.sh --force rebuilds it)"
    done
elif [ -n "$have_drv" ]; then
    result $(has "$drv" '^dsh: /dev/dimmnet2-0 \(driver\), WID [01]'; echo $?) "dsh -d /dev/dimmnet2-0 opens through the driver (info)"
    result $(has "$drv" '^#[0-9a-f]{5,}: 5a5a00015a5a0000 5a5a00035a5a0002$'; echo $?) "driver mode: llcm_write / llcm_read"
    result $(has "$drv" '^#[0-9a-f]{5,}: 3333000133330000 3333000333330002$'; echo $?) "driver mode: ww_write, prim VS, prim VL, wait pw, pw_read"
    result $(has "$drv" '^DSH-DRV-RC rc=0$'; echo $?) "driver mode: no command failed"
    result $(has "$drv" 'sreg_read: error: the System Register is not available to users' && has "$drv" '^DSH-DRV-SREG rc=1$'; echo $?) \
       "driver mode: sreg_read reports that the System Register is not available to users"
fi

diag "dsh's output in the guest: $log.out"
if [ "$tap_failed" != 0 ] || [ "$tap_n" != "$plan" ]; then
    diag "guest output:"
    printf '%s\n' "$out" | sed 's/^/  /' | diag
fi
tap_done
