#!/usr/bin/env bash
# with-priority.sh NAME CMD...: runs CMD at NAME's CPU priority class (platform/priority.ts, the same
# table): the read models (forensics, ferretdb) at nice 10, everything else unchanged. Called right after
# setsid, so this process leads its own session and scheduler autogroup, where a nice value counts only
# against the group's own processes: the group's nice (/proc/self/autogroup) is set too. DROVER_PRIORITY=off:
# CMD runs unchanged.
set -euo pipefail
name=$1; shift
case $name in forensics | ferretdb) nice=10 ;; *) nice=0 ;; esac
if [[ $nice == 0 || ${DROVER_PRIORITY:-} == off ]]; then exec "$@"; fi
printf '[drover] %s runs at priority class read-model (nice %s; DROVER_PRIORITY=off: unchanged)\n' "$name" "$nice" >&2
# Only where the kernel groups by session (sched_autogroup_enabled=1); a failure leaves the group as it is.
[[ -w /proc/self/autogroup ]] && { echo "$nice" >/proc/self/autogroup; } 2>/dev/null || true
exec nice -n "$nice" "$@"
