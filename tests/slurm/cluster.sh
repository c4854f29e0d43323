#!/usr/bin/env bash
# A real single-node Slurm cluster on localhost, for tests and CI.
#   tests/slurm/cluster.sh start DIR   start munged, slurmctld and slurmd; PIDs, state and logs under DIR
#   tests/slurm/cluster.sh stop DIR    stop exactly the processes recorded under DIR
# Needs root and Debian's packages: apt-get install -y --no-install-recommends munge slurmctld slurmd slurm-client
# Exit codes: 0 ok, 2 usage, 3 packages missing, 4 not root, 5 start-up failed.
# Two partitions on one node: cpu (default) and gpu (Gres=gpu:2, backed by /dev/null and /dev/zero).
# No accounting (sacct does not work): use the executor's squeue status command; MinJobAge=3600 (tests read
# the job records back after a run, and a run on a busy machine can outlast 10 min).
# Environment: SLURM_CI_CPUS (default 2), SLURM_CI_MEM_MB (RealMemory, default 4096), SLURM_CI_WAIT (s, default 60).
set -euo pipefail

usage() { echo "usage: $0 start|stop DIR" >&2; exit 2; }
[ $# -eq 2 ] || usage
action=$1
dir=$(mkdir -p "$2" && cd "$2" && pwd)
conf_dir=/etc/slurm
wait_s=${SLURM_CI_WAIT:-60}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

stop_one() {  # stop_one NAME: TERM the recorded PID, wait up to 15 s, then KILL
    local pidfile=$dir/$1.pid pid
    [ -f "$pidfile" ] || return 0
    pid=$(cat "$pidfile")
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
    fi
    rm -f "$pidfile"
}

if [ "$action" = stop ]; then
    stop_one slurmd; stop_one slurmctld; stop_one munged
    echo "slurm cluster under $dir stopped"
    exit 0
fi
[ "$action" = start ] || usage

missing=()
for tool in munged munge unmunge slurmctld slurmd sinfo sbatch squeue scontrol; do
    command -v "$tool" >/dev/null 2>&1 || [ -x "/usr/sbin/$tool" ] || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
    echo "Slurm/munge not installed (missing: ${missing[*]});" \
         "apt-get install -y --no-install-recommends munge slurmctld slurmd slurm-client" >&2
    exit 3
fi
[ "$(id -u)" -eq 0 ] || { echo "cluster.sh must run as root" >&2; exit 4; }
export PATH=$PATH:/usr/sbin

if alive "$dir/munged.pid" && alive "$dir/slurmctld.pid" && alive "$dir/slurmd.pid" \
   && sinfo -h -N -o '%t' 2>/dev/null | grep -qx idle; then
    echo "slurm cluster under $dir already running"; exit 0
fi
# A partial earlier start under DIR: stop what is left and start afresh.
stop_one slurmd; stop_one slurmctld; stop_one munged

host=$(hostname -s)
cpus=${SLURM_CI_CPUS:-2}
mem=${SLURM_CI_MEM_MB:-4096}
mkdir -p "$dir/log" "$dir/run" "$conf_dir"
rm -rf "$dir/spool"; mkdir -p "$dir/spool/slurmctld" "$dir/spool/slurmd"

# munge: key from the package's postinst, else create one; munged runs as user munge.
if ! (munge -n 2>/dev/null | unmunge >/dev/null 2>&1); then
    [ -s /etc/munge/munge.key ] || { mungekey --create; chown munge:munge /etc/munge/munge.key; chmod 600 /etc/munge/munge.key; }
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge:munge /run/munge /var/log/munge /var/lib/munge
    setpriv --reuid=munge --regid=munge --clear-groups /usr/sbin/munged --foreground \
        >"$dir/log/munged.out" 2>&1 &
    echo $! >"$dir/munged.pid"
    for _ in $(seq 40); do (munge -n 2>/dev/null | unmunge >/dev/null 2>&1) && break; sleep 0.25; done
    (munge -n | unmunge >/dev/null) || { echo "munged did not come up; see $dir/log/munged.out" >&2; exit 5; }
fi

cat >"$conf_dir/slurm.conf" <<CONF
# written by tests/slurm/cluster.sh (state under $dir)
ClusterName=ci
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SwitchType=switch/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
# The node's CPUs are SLURM_CI_CPUS, not what slurmd detects (tests/workflow/test_slurm.py declares more than it has).
SlurmdParameters=config_overrides
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
DefMemPerCPU=500
SchedulerParameters=batch_sched_delay=0
MinJobAge=3600
EnforcePartLimits=ALL
ReturnToService=2
StateSaveLocation=$dir/spool/slurmctld
SlurmdSpoolDir=$dir/spool/slurmd
SlurmctldPidFile=$dir/run/slurmctld.daemon.pid
SlurmdPidFile=$dir/run/slurmd.daemon.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
GresTypes=gpu
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem Gres=gpu:2 State=UNKNOWN
PartitionName=cpu Nodes=$host Default=YES MaxTime=INFINITE State=UP
PartitionName=gpu Nodes=$host MaxTime=INFINITE State=UP
CONF
cat >"$conf_dir/gres.conf" <<CONF
# written by tests/slurm/cluster.sh: two stand-in GPUs (File= must be a character device)
NodeName=$host Name=gpu File=/dev/null
NodeName=$host Name=gpu File=/dev/zero
CONF

slurmctld -D >"$dir/log/slurmctld.out" 2>&1 &
echo $! >"$dir/slurmctld.pid"
sleep 1
slurmd -D >"$dir/log/slurmd.out" 2>&1 &
echo $! >"$dir/slurmd.pid"

deadline=$((SECONDS + wait_s))
until sinfo -h -N -o '%t' 2>/dev/null | grep -qx idle; do
    if [ $SECONDS -ge $deadline ] || ! alive "$dir/slurmctld.pid" || ! alive "$dir/slurmd.pid"; then
        echo "node not idle after ${wait_s}s; sinfo: $(sinfo -h -N -o '%N %t %E' 2>&1)" >&2
        tail -n 20 "$dir/log/slurmctld.log" "$dir/log/slurmd.log" "$dir"/log/*.out >&2 2>/dev/null || true
        stop_one slurmd; stop_one slurmctld; stop_one munged
        exit 5
    fi
    sleep 1
done
echo "slurm cluster up under $dir: $(sinfo -h -o '%P %a %D %t %G' | tr '\n' ';')"
