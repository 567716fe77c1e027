#!/usr/bin/env bash
# Start a Dask scheduler and workers that write their address to a scheduler file,
# then wait; Ctrl-C (or SIGTERM) stops them all.  mgapsp attaches with
#     mgapsp run GRAPH -o STORE --scheduler-file FILE
#
# Usage: cluster/start-cluster.sh [-f SCHEDULER_FILE] [-n WORKERS] [-H HOST] [-p PORT]
#                                 [-d DASHBOARD] [--cpu] [--tls DIR | --plain]
#   -f FILE   scheduler file to write (default: ./scheduler.json)
#   -n N      workers: GPUs to use with dask-cuda (default: every visible GPU), or
#             single-threaded CPU worker processes (default: one per core)
#   -H HOST   interface to listen on (default: 127.0.0.1; use the node's address
#             on a real cluster, where the scheduler file lives on a shared disk)
#   -p PORT   scheduler port (default: 0 = any free port)
#   -d ADDR   HOST:PORT of the scheduler's dashboard (default: 127.0.0.1:8787, or a
#             free port if taken; the workers' dashboards: that HOST, free ports).
#             Loopback even with -H; from your machine, run
#             ssh -L 8787:127.0.0.1:8787 NODE and open http://localhost:8787.  Another
#             HOST serves it there to anyone who reaches it (it has no login)
#   --cpu     plain `dask worker` processes even where GPUs exist
#   --tls DIR every connection is encrypted and authenticated with DIR/ca.pem,
#             cert.pem and key.pem (made by cluster/make-tls.sh when missing; key.pem
#             readable by you alone). Default DIR: the scheduler file's name plus
#             .tls (./scheduler.json.tls), where mgapsp run --scheduler-file FILE
#             finds them; other clients give the same files (mgapsp run
#             --tls-ca-file DIR/ca.pem --tls-cert DIR/cert.pem --tls-key DIR/key.pem)
#   --plain   plain TCP instead: any user who can reach the scheduler can run code
#             in the workers as you
# Workers need mgapsp installed and the output store on a disk they all see.
set -euo pipefail

file=./scheduler.json; nworkers=""; host=127.0.0.1; port=0; force_cpu=0; tls=""; plain=0
dashboard=127.0.0.1:8787
while [ $# -gt 0 ]; do
  case "$1" in
    -f) file=$2; shift 2 ;;
    -n) nworkers=$2; shift 2 ;;
    -H) host=$2; shift 2 ;;
    -p) port=$2; shift 2 ;;
    -d) dashboard=$2; shift 2 ;;
    --cpu) force_cpu=1; shift ;;
    --tls) tls=$2; shift 2 ;;
    --plain) plain=1; shift ;;
    -h|--help) sed -n '2,28p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

gpus=0
if [ "$force_cpu" = 0 ] && command -v nvidia-smi >/dev/null 2>&1; then
  gpus=$(nvidia-smi --list-gpus 2>/dev/null | wc -l || echo 0)
fi

if [ "$plain" = 1 ] && [ -n "$tls" ]; then
  echo "error: --tls and --plain contradict each other" >&2; exit 2
fi
[ "$plain" = 1 ] || tls=${tls:-$file.tls}
security=()
if [ -n "$tls" ]; then
  bash "$(dirname "$0")/make-tls.sh" "$tls" localhost "$host" >/dev/null
  security=(--tls-ca-file "$tls/ca.pem" --tls-cert "$tls/cert.pem" --tls-key "$tls/key.pem")
  export DASK_DISTRIBUTED__COMM__REQUIRE_ENCRYPTION=True
fi
proto=$([ -n "$tls" ] && echo tls || echo tcp)
# the workers' dashboards on the scheduler dashboard's interface, each on a free port
# (Dask's default for workers is every interface)
case "$dashboard" in *:*) worker_dashboard="${dashboard%:*}:0" ;; *) worker_dashboard=":0" ;; esac

pids=()
cleanup() {
  trap - INT TERM EXIT
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
}
trap cleanup INT TERM EXIT

rm -f "$file"
dask scheduler --scheduler-file "$file" --host "$host" --port "$port" \
  --protocol "$proto" "${security[@]}" --dashboard-address "$dashboard" &
pids+=($!)
for _ in $(seq 100); do [ -s "$file" ] && break; sleep 0.2; done
[ -s "$file" ] || { echo "error: the scheduler did not write $file" >&2; exit 1; }

if [ "$gpus" -gt 0 ]; then
  if [ -n "$nworkers" ] && [ -z "${CUDA_VISIBLE_DEVICES:-}" ]; then
    export CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((nworkers - 1)))
  fi
  # dask-cuda starts one worker per visible GPU, each pinned to its device, with the
  # threads of mgapsp's own clusters (python -m mgapsp.jobs.worker reads mgapsp's config)
  python3 -m mgapsp.jobs.worker --scheduler-file "$file" --host "$host" \
    --dashboard-address "$worker_dashboard" "${security[@]}" &
  pids+=($!)
  echo "started a scheduler and dask-cuda workers on ${CUDA_VISIBLE_DEVICES:-all $gpus GPUs}"
else
  nworkers=${nworkers:-$(nproc)}
  dask worker --scheduler-file "$file" --host "$host" --nworkers "$nworkers" \
    --nthreads 1 --protocol "$proto" --dashboard-address "$worker_dashboard" \
    "${security[@]}" &
  pids+=($!)
  echo "started a scheduler and $nworkers CPU workers"
fi
echo "scheduler file: $file"
[ -z "$tls" ] || echo "TLS: $tls (mgapsp run --scheduler-file $file uses it)"
echo "dashboard: $dashboard (the scheduler's \"dashboard at\" line says which port it took)"
wait -n "${pids[@]}"
