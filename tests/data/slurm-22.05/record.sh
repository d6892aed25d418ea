#!/bin/bash
# Records the Slurm 22.05 answers in this folder from a fresh testbed (README.md says what each file is).
# Run as root from the repository root: bash tests/data/slurm-22.05/record.sh  (about 90 s)
set -euo pipefail
OUT=$(cd "$(dirname "$0")" && pwd)
DIR=/tmp/wattsched-testbed-record
REPO=$(pwd)
WS="env PYTHONPATH=$REPO/src $REPO/.venv/bin/python -m wattsched"
pretty() { python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), indent=2))'; }
eval "$WS testbed down --dir $DIR --purge" >/dev/null 2>&1 || true
eval "$WS testbed up --dir $DIR --nodes 8 --license-total 1000" >/dev/null
export SLURM_CONF=$DIR/slurm.conf
cd $DIR/work
as() { runuser -u "$1" -- "${@:2}"; }
# phase 1: ended jobs for sacct
as wsalice sbatch -J done2n -N2 -L power:500 --comment testpower=250 --wrap 'srun sleep 3' >/dev/null
as wsbob sbatch -J done1n -N1 --comment testpower=150 --wrap 'srun sleep 4' >/dev/null
as wsbob sbatch -J fails -N1 --wrap 'srun false' >/dev/null
C=$(as wsalice sbatch --parsable -J cancelled -N1 -L power:100 --wrap 'srun sleep 100')
sleep 2; scancel "$C"
while [ -n "$(squeue -h)" ]; do sleep 1; done
sleep 3  # slurmdbd gets the job ends
# phase 2: a queue with running multi-node jobs and pending ones for every reason
as wsalice sbatch -J run3n -N3 -L power:600 --comment testpower=200 --wrap 'srun sleep 300' >/dev/null
as wsbob sbatch -J run2n -N2 --comment testpower=300 --wrap 'srun sleep 300' >/dev/null
sleep 3
as wsalice sbatch -J waitlic -N1 -L power:600 --comment testpower=100 --wrap 'srun sleep 60' >/dev/null
as wsbob sbatch -J waitnodes -N4 --wrap 'srun sleep 60' >/dev/null
as wsbob sbatch -H -J held -N1 -L power:100 --wrap 'srun sleep 60' >/dev/null
sleep 4
squeue --json | pretty > "$OUT/squeue.json"
scontrol show node -o > "$OUT/scontrol-show-node.txt"
scontrol show license -o > "$OUT/scontrol-show-license.txt"
sinfo --json | pretty > "$OUT/sinfo.json"
sacct --json -a -S now-1hour | pretty > "$OUT/sacct.json"
sacct -a -S now-1hour -P -o JobID,JobName,User,State,ExitCode,NNodes,ElapsedRaw,ConsumedEnergyRaw,AllocTRES \
  > "$OUT/sacct-energy.txt"
sinfo --version > "$OUT/sinfo-version.txt"
eval "$WS testbed down --dir $DIR --purge" >/dev/null
# phase 3: the power budget as a remote license, and a change of its count
eval "$WS testbed up --dir $DIR --nodes 2 --remote-license --license-total 1500" >/dev/null
sacctmgr show resource -P > "$OUT/sacctmgr-show-resource.txt"
scontrol show license -o > "$OUT/scontrol-show-license-remote.txt"
sacctmgr -i modify resource name=power server=testbed set count=1200 >/dev/null
sleep 3
sacctmgr show resource -P > "$OUT/sacctmgr-show-resource-modified.txt"
scontrol show license -o > "$OUT/scontrol-show-license-remote-modified.txt"
eval "$WS testbed down --dir $DIR --purge" >/dev/null
