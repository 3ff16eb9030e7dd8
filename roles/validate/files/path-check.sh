# shellcheck shell=sh
# path-check.sh NONCE SOURCE NETDEV PEER SIZE: one host's check of the path to a peer, in one command.
# A small ping first (plain reachability: ARP and one round trip on the fabric netdev); only when
# it answers, the unfragmented ping at SIZE (the intent's MTU). When the small ping fails, what
# this host can see of the path instead: its neighbour entry for the peer, the netdev's carrier and
# error counters, and the kernel's transmit watchdog lines.
# path-check.sh NONCE --evidence NETDEV PEER: only that evidence (read on the far end of a failed path).
# Each part is printed after a line "== NONCE NAME rc=RC"; NONCE is the run's own (the role draws
# it), so no text a tool prints can pass for a part's line: rdmaops.roce.fabric_check reads only
# the lines that carry it (measure.parse_path_check). The addresses and the netdev are checked
# first (an address is four decimal numbers 0-255; nothing else reaches ping or ip), and every
# operand follows "--"; a refused operand is one part "== NONCE refused rc=2".
nonce=$1
case $nonce in
  *[!0-9a-f]* | '') echo "path-check.sh: the first operand must be the run's nonce (16 or more hex digits)" >&2; exit 2 ;;
esac
if [ "${#nonce}" -lt 16 ]; then
  echo "path-check.sh: the first operand must be the run's nonce (16 or more hex digits)" >&2
  exit 2
fi
shift
refuse() {
  printf '== %s refused rc=2\n%s\n' "$nonce" "$1"
  exit 2
}
is_ipv4() {
  case $1 in '' | *[!0-9.]* | .* | *. | *..*) return 1 ;; esac
  saved_ifs=$IFS
  IFS=.
  # shellcheck disable=SC2086 # split on the dots: only digits and dots are left
  set -- $1
  IFS=$saved_ifs
  [ "$#" -eq 4 ] || return 1
  for octet in "$@"; do
    case $octet in 0) ;; 0* | ????*) return 1 ;; esac
    [ "$octet" -le 255 ] || return 1
  done
  return 0
}
check_netdev() {
  # the kernel's rule (1-15 bytes, no '/', ':' or whitespace) and the collection's (letters, digits, _ . -)
  case $1 in '' | -* | .* | *[!A-Za-z0-9_.-]*) refuse "the netdev operand is not an interface name (1-15 of A-Z a-z 0-9 _ . -)" ;; esac
  [ "${#1}" -le 15 ] || refuse "the netdev operand is not an interface name (1-15 of A-Z a-z 0-9 _ . -)"
}
part() {
  name=$1
  shift
  out=$("$@" 2>&1)
  printf '== %s %s rc=%s\n%s\n' "$nonce" "$name" "$?" "$out"
}
kernel_log() {
  # the kernel log may be closed to this user (dmesg_restrict): then it gives no lines
  { dmesg 2>/dev/null || journalctl -k -q --no-pager -n 2000 2>/dev/null; } \
    | grep -E -e "NETDEV WATCHDOG|TX timeout|$netdev: .*([Ll]ink is [Dd]own|carrier)" | tail -n 5
  return 0
}
evidence() {
  part neigh ip -j neigh show to "$peer" dev "$netdev"
  part link ip -s -j link show dev "$netdev"
  part kernel kernel_log
}
if [ "$1" = "--evidence" ]; then
  netdev=$2 peer=$3
  check_netdev "$netdev"
  is_ipv4 "$peer" || refuse "the peer operand is not an IPv4 address (four decimal numbers 0-255)"
  evidence
  exit 0
fi
source=$1 netdev=$2 peer=$3 size=$4
is_ipv4 "$source" || refuse "the source operand is not an IPv4 address (four decimal numbers 0-255)"
check_netdev "$netdev"
is_ipv4 "$peer" || refuse "the peer operand is not an IPv4 address (four decimal numbers 0-255)"
case $size in '' | *[!0-9]* | 0?* | ??????*) refuse "the size operand is not a number of bytes (0-65507)" ;; esac
[ "$size" -le 65507 ] || refuse "the size operand is not a number of bytes (0-65507)"
small=$(ping -n -c 2 -W 2 -I "$source" -- "$peer" 2>&1)
rc=$?
printf '== %s small rc=%s\n%s\n' "$nonce" "$rc" "$small"
if [ "$rc" -eq 0 ]; then
  part jumbo ping -n -c 2 -W 3 -M "do" -I "$source" -s "$size" -- "$peer"
else
  evidence
fi
