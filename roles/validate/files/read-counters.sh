# shellcheck shell=sh
# The validate role's one read per host (run by sh -c, netdevs as arguments): every RDMA port's
# hw_counters as PATH:VALUE, per netdev the PFC pause and out-of-buffer lines of ethtool -S after
# "== ethtool NETDEV", and which test tools are installed as "== tool NAME PATH". Reads only.
for f in /sys/class/infiniband/*/ports/*/hw_counters/*; do
  [ -f "$f" ] && v=$(cat "$f" 2>/dev/null) && echo "$f:$v"
done
for n in "$@"; do
  echo "== ethtool $n"
  ethtool -S "$n" 2>/dev/null | grep -E '_pause:|out_of_buffer:'
done
for t in ib_write_bw ib_write_lat all_reduce_perf; do
  p=$(command -v "$t") && echo "== tool $t $p"
done
exit 0
