#!/bin/bash
# A real live migration between two libvirtd instances on this machine (issue 15), each in
# its own namespaces: UTS (its own hostname), network (a veth pair, 192.0.2.1 and .2 of
# TEST-NET-1, nothing else), mount (its own /run, /var/lib/libvirt, /var/log/libvirt,
# /var/cache/libvirt and /etc/libvirt, bind-mounted from this test's directory), each with
# its own virtlogd, vcpuplaced and hook. libvirt compares host UUIDs and refuses a
# migration to its own: each instance gets host_uuid in its libvirtd.conf.
#
# A TCG guest placed on host a is migrated with `virsh migrate --live` over qemu+tcp (auth
# none, on the veth address only) to host b, where a guest already holds the CPU it had:
# b's hook must take a's pins out at `migrate begin` and b's daemon place it anew on
# another CPU; a's daemon must release it.
. "$(dirname "$0")/lib.sh"
[ "$(id -u)" -eq 0 ] || e2e_skip "needs root: namespaces and libvirtd"
for t in unshare nsenter ip libvirtd virtlogd; do
    command -v "$t" >/dev/null || e2e_skip "needs $t"
done
vpd_build=${VP_BUILDDIR:-$e2e_top/build}
daemon=$vpd_build/plugin/daemon/vcpuplaced
hook=$vpd_build/plugin/hook/vcpuplace-hook
cli=$vpd_build/plugin/cli/vcpuplace
for b in "$daemon" "$hook" "$cli"; do [ -x "$b" ] || e2e_fail "$b not built"; done
ip netns add vpmig-probe 2>/dev/null || e2e_skip "cannot create a network namespace here"
ip netns del vpmig-probe

declare -A holder addr vpd uuid
addr[a]=192.0.2.1
addr[b]=192.0.2.2
uuid[a]=6b1f0d52-7a00-4c1e-9a51-00000000000a
uuid[b]=6b1f0d52-7a00-4c1e-9a51-00000000000b

ns_run() { # host command...
    local h=$1
    shift
    nsenter -t "${holder[$h]}" -m -u -n -- "$@"
}

teardown() {
    local h
    for h in a b; do
        [ -n "${holder[$h]:-}" ] || continue
        ns_run "$h" virsh -q list --name 2>/dev/null | while read -r g; do
            [ -z "$g" ] || ns_run "$h" virsh -q destroy "$g" >/dev/null 2>&1
        done
        [ -z "${vpd[$h]:-}" ] || kill -TERM "${vpd[$h]}" 2>/dev/null
        local p
        for p in libvirtd virtlogd; do
            [ -f "$e2e_tmp/$h/run/$p.pid" ] && kill -TERM "$(cat "$e2e_tmp/$h/run/$p.pid")" 2>/dev/null
        done
        sleep 1
        kill -TERM "${holder[$h]}" 2>/dev/null
        ip netns del "vpmig-$h" 2>/dev/null
    done
    for h in a b; do
        [ ! -s "$e2e_tmp/$h/vcpuplaced.log" ] || {
            echo "--- host $h: vcpuplaced log (last 8 lines)"
            tail -n 8 "$e2e_tmp/$h/vcpuplaced.log"
        }
    done
}
e2e_at_exit teardown

ip netns del vpmig-a 2>/dev/null || true
ip netns del vpmig-b 2>/dev/null || true
ip netns add vpmig-a
ip netns add vpmig-b
ip link add vpmig-a0 netns vpmig-a type veth peer name vpmig-b0 netns vpmig-b
for h in a b; do
    ip -n "vpmig-$h" addr add "${addr[$h]}/30" dev "vpmig-${h}0"
    ip -n "vpmig-$h" link set "vpmig-${h}0" up
    ip -n "vpmig-$h" link set lo up
done

online=$(cat /sys/devices/system/cpu/online)
# Hosts that migrate between them share the key of the applied-pins records (README): the
# destination believes the source's record only when it can check its signature.
head -c 32 /dev/urandom >"$e2e_tmp/applied.key"
for h in a b; do
    d=$e2e_tmp/$h
    mkdir -p "$d"/{run/libvirt,lib/qemu,log/qemu,cache,etc,state}
    install -m 0600 "$e2e_tmp/applied.key" "$d/state/applied.key"
    chmod 0755 "$d" "$d/run" "$d/lib" "$d/log"
    for s in channel/target checkpoint dump nvram ram save snapshot; do mkdir -p "$d/lib/qemu/$s"; done
    chown -R libvirt-qemu:libvirt-qemu "$d/lib/qemu"
    cp -a /etc/libvirt/. "$d/etc/"
    rm -rf "$d/etc/hooks/qemu.d" "$d/etc/qemu/"*.xml "$d/etc/qemu/autostart"
    mkdir -p "$d/etc/hooks/qemu.d"
    cp -a /var/cache/libvirt/. "$d/cache/" 2>/dev/null || true
    cat >"$d/etc/libvirtd.conf" <<EOF
listen_tls = 0
listen_tcp = 1
listen_addr = "${addr[$h]}"
auth_tcp = "none"
host_uuid = "${uuid[$h]}"
log_outputs = "1:file:$d/libvirtd.log"
log_filters = "1:util.hook 1:util.command 3:*"
EOF
    echo "log_outputs = \"3:file:$d/virtlogd.log\"" >"$d/etc/virtlogd.conf"
    cat >"$d/vcpuplaced.conf" <<EOF
[daemon]
mode=enforce
adopt_running=yes
uri=qemu:///system
topology=host
housekeeping_cpus=none
host_cpus=$online
socket=$d/vcpuplaced.sock
state=$d/state/ledger.json
domains=vpe2e-d-*
EOF
    printf '#!/bin/sh\nVCPUPLACE_CONFIG=%s exec %s "$@"\n' "$d/vcpuplaced.conf" "$hook" \
        >"$d/etc/hooks/qemu.d/vcpuplace"
    chmod 0755 "$d/etc/hooks/qemu.d/vcpuplace"
    ip netns exec "vpmig-$h" unshare --uts --mount --propagation private -- /bin/bash -c "
        set -e
        hostname vpmig-$h
        mount --bind $d/run /run
        mount --bind $d/etc /etc/libvirt
        mount --bind $d/lib /var/lib/libvirt
        mount --bind $d/log /var/log/libvirt
        mount --bind $d/cache /var/cache/libvirt
        echo \$\$ >$d/holder.pid
        exec sleep infinity" &
    vp_wait_until 10 test -s "$d/holder.pid" || e2e_fail "namespace holder of host $h did not come up"
    holder[$h]=$(cat "$d/holder.pid")
    e2e_expect_eq "host $h: its own hostname" "vpmig-$h" "$(ns_run "$h" hostname)"
    ns_run "$h" virtlogd -d
    ns_run "$h" libvirtd -d -l
done
for h in a b; do
    vp_wait_until 120 ns_run "$h" virsh -q version >/dev/null 2>&1 ||
        e2e_fail "libvirtd of host $h does not answer; see $e2e_tmp/$h/libvirtd.log"
    got=$(ns_run "$h" virsh capabilities | sed -n 's:.*<uuid>\(.*\)</uuid>.*:\1:p' | head -n 1)
    e2e_expect_eq "host $h: libvirt's host UUID" "${uuid[$h]}" "$got"
    # nsenter itself, not ns_run: a function in the background is a subshell, and its pid
    # (what teardown killed) left vcpuplaced running, holding the e2e lock it inherited.
    nsenter -t "${holder[$h]}" -m -u -n -- "$daemon" --config "$e2e_tmp/$h/vcpuplaced.conf" \
        >>"$e2e_tmp/$h/vcpuplaced.log" 2>&1 &
    vpd[$h]=$!
    vp_wait_until 20 sh -c "'$cli' status --config '$e2e_tmp/$h/vcpuplaced.conf' | grep -q '(connected)'" ||
        e2e_fail "vcpuplaced of host $h not connected"
done
e2e_pass "two libvirtd instances up, each with its own namespaces, vcpuplaced and hook"

status_json() { "$cli" status --json --config "$e2e_tmp/$1/vcpuplaced.conf"; }
planned() { # host guest: "state cpu,cpu"
    status_json "$1" | python3 -c 'import json,sys
d=[d for d in json.load(sys.stdin)["domains"] if d["domain"]==sys.argv[1]]
print(d[0]["state"] + " " + ",".join(str(v["cpu"]) for v in d[0]["vcpus"]) if d else "none")' "$2"
}
is_applied() { planned "$1" "$2" | grep -q '^applied '; }
proc_cpus() { # host guest: each vCPU thread's allowed list, in vCPU order
    local pid
    pid=$(cat "$e2e_tmp/$1/run/libvirt/qemu/$2.pid")
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "-name guest=$2," || e2e_fail "pid $pid is not $2's QEMU"
    e2e_vcpu_threads "$pid" | while read -r _ tid; do e2e_allowed_list "$pid" "$tid"; done | paste -sd,
}

"$e2e_top/scripts/guest-xml" vpe2e-d-mig --policy smt=spread >"$e2e_tmp/mig.xml"
"$e2e_top/scripts/guest-xml" vpe2e-d-mig-fill --policy smt=spread >"$e2e_tmp/fill.xml"
ns_run a virsh -q create "$e2e_tmp/mig.xml" >/dev/null
vp_wait_until 20 is_applied a vpe2e-d-mig || e2e_fail "host a: vpe2e-d-mig $(planned a vpe2e-d-mig)"
src=$(planned a vpe2e-d-mig | cut -d' ' -f2)
e2e_expect_eq "host a: /proc shows a's plan" "$src" "$(proc_cpus a vpe2e-d-mig)"
e2e_expect_match "host a: the live XML carries the pin" "vcpupin vcpu='0' cpuset='$src'" \
    "$(ns_run a virsh dumpxml vpe2e-d-mig)"

ns_run b virsh -q create "$e2e_tmp/fill.xml" >/dev/null
vp_wait_until 20 is_applied b vpe2e-d-mig-fill || e2e_fail "host b: filler $(planned b vpe2e-d-mig-fill)"
fill=$(planned b vpe2e-d-mig-fill | cut -d' ' -f2)
[ "$fill" = "$src" ] || e2e_skip "host b placed its filler on CPU $fill, not $src: cannot show a re-placement"
e2e_pass "host b: another guest holds CPU $src, the one vpe2e-d-mig has on host a"

out=$(ns_run a virsh migrate --live vpe2e-d-mig "qemu+tcp://${addr[b]}/system" \
    --migrateuri "tcp://${addr[b]}:49152" 2>&1) || e2e_fail "virsh migrate failed: $out"
e2e_pass "virsh migrate --live a -> b over the veth pair"
e2e_expect_eq "host b runs it" running "$(ns_run b virsh domstate vpe2e-d-mig)"
vp_wait_until 20 is_applied b vpe2e-d-mig || e2e_fail "host b: vpe2e-d-mig $(planned b vpe2e-d-mig)"
dst=$(planned b vpe2e-d-mig | cut -d' ' -f2)
[ "$dst" != "$src" ] || e2e_fail "host b kept a's pin $src, which its filler holds"
e2e_pass "host b placed it anew on CPU $dst"
e2e_expect_eq "host b: /proc shows b's plan" "$dst" "$(proc_cpus b vpe2e-d-mig)"
e2e_expect_eq "host b: virsh vcpupin shows b's plan" "$dst" \
    "$(ns_run b virsh -q vcpupin vpe2e-d-mig 0 | awk '{print $2}')"
e2e_expect_match "host b: its hook took a's pins out at migrate begin" \
    'domain vpe2e-d-mig: the pins vcpuplace applied where it ran before are taken out' \
    "$(cat "$e2e_tmp/b/vcpuplaced.log")"
gone() { [ "$(planned a vpe2e-d-mig)" = none ]; }
vp_wait_until 20 gone || e2e_fail "host a still records vpe2e-d-mig: $(planned a vpe2e-d-mig)"
e2e_pass "host a released vpe2e-d-mig's CPU $src"
for h in a b; do
    out=$(ns_run "$h" python3 "$e2e_top/tests/e2e/chaos-invariants.py" --cli "$cli" \
        --config "$e2e_tmp/$h/vcpuplaced.conf" --prefix vpe2e-d-mig) ||
        e2e_fail "host $h invariants: $out"
done
e2e_pass "both hosts: status --json and /proc agree, no CPU booked twice"
