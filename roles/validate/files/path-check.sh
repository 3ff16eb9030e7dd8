# shellcheck shell=sh
# path-check.sh SOURCE NETDEV PEER SIZE: one host's check of the path to a peer, in one command.
# A small ping first (plain reachability: ARP and one round trip on the fabric netdev); only when
# it answers, the unfragmented ping at SIZE (the intent's MTU). When the small ping fails, what
# this host can see of the path instead: its neighbour entry for the peer, the netdev's carrier and
# error counters, and the kernel's transmit watchdog lines.
# path-check.sh --evidence NETDEV PEER: only that evidence (read on the far end of a failed path).
# Each part is printed after a line "== NAME rc=RC"; rdmaops.roce.fabric_check reads them
# (measure.parse_path_check).
part() {
  name=$1
  shift
  out=$("$@" 2>&1)
  printf '== %s rc=%s\n%s\n' "$name" "$?" "$out"
}
kernel_log() {
  # the kernel log may be closed to this user (dmesg_restrict): then it gives no lines
  { dmesg 2>/dev/null || journalctl -k -q --no-pager -n 2000 2>/dev/null; } \
    | grep -E "NETDEV WATCHDOG|TX timeout|$netdev: .*([Ll]ink is [Dd]own|carrier)" | tail -n 5
  return 0
}
evidence() {
  part neigh ip -j neigh show to "$peer" dev "$netdev"
  part link ip -s -j link show dev "$netdev"
  part kernel kernel_log
}
if [ "$1" = "--evidence" ]; then
  netdev=$2 peer=$3
  evidence
  exit 0
fi
source=$1 netdev=$2 peer=$3 size=$4
small=$(ping -n -c 2 -W 2 -I "$source" "$peer" 2>&1)
rc=$?
printf '== small rc=%s\n%s\n' "$rc" "$small"
if [ "$rc" -eq 0 ]; then
  part jumbo ping -n -c 2 -W 3 -M "do" -I "$source" -s "$size" "$peer"
else
  evidence
fi
