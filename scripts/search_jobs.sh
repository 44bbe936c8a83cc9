# Sourced by the reproduce_*.sh search scripts. `run_jobs [substring ...]` runs the entries of the
# array `jobs`, each "OUT ARGS...", as `naslib-plugins search ARGS --out results/OUT`, JOBS at a
# time (default 2); given substrings, only the jobs whose OUT contains one of them, in order.
run_jobs() {
  local selected=() job want
  for job in "${jobs[@]}"; do
    if [ $# -eq 0 ]; then selected+=("$job"); continue; fi
    for want in "$@"; do [[ "${job%% *}" == *"$want"* ]] && { selected+=("$job"); break; }; done
  done
  printf '%s\n' "${selected[@]}" | xargs -P "${JOBS:-2}" -I{} sh -c 'set -- {}; out=$1; shift;
    naslib-plugins search "$@" --out "results/$out"'
}
