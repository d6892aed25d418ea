#!/bin/bash
# Records slurmrestd's answers (OpenAPI v0.0.38, JWT) into this folder from a fresh testbed with --rest, with the
# same jobs as record.sh's phase 1 and 2 (README.md). Run as root from the repository root:
#   bash tests/data/slurm-22.05/record-rest.sh  (about 30 s)
set -euo pipefail
OUT=$(cd "$(dirname "$0")" && pwd)
DIR=/tmp/wattsched-testbed-record-rest
REPO=$(pwd)
WS="env PYTHONPATH=$REPO/src $REPO/.venv/bin/python -m wattsched"
pretty() { python3 -c 'import json,sys; print(json.dumps(json.load(sys.stdin), indent=2))'; }
$WS testbed down --dir $DIR --purge >/dev/null 2>&1 || true
$WS testbed up --dir $DIR --nodes 8 --license-total 1000 --rest >/dev/null
export SLURM_CONF=$DIR/slurm.conf
URL=$(python3 -c "import json; print(json.load(open('$DIR/testbed.json'))['rest_url'])")
TOKEN=$(scontrol token lifespan=600 | cut -d= -f2)
get() { curl -sf -H "X-SLURM-USER-NAME: root" -H "X-SLURM-USER-TOKEN: $TOKEN" "$URL$1"; }
cd $DIR/work
as() { runuser -u "$1" -- "${@:2}"; }
as wsalice sbatch -J done2n -N2 -L power:500 --comment testpower=250 --wrap 'srun sleep 3' >/dev/null
as wsbob sbatch -J done1n -N1 --comment testpower=150 --wrap 'srun sleep 4' >/dev/null
as wsbob sbatch -J fails -N1 --wrap 'srun false' >/dev/null
C=$(as wsalice sbatch --parsable -J cancelled -N1 -L power:100 --wrap 'srun sleep 100')
sleep 2; scancel "$C"
while [ -n "$(squeue -h)" ]; do sleep 1; done
sleep 3
as wsalice sbatch -J run3n -N3 -L power:600 --comment testpower=200 --wrap 'srun sleep 300' >/dev/null
as wsbob sbatch -J run2n -N2 --comment testpower=300 --wrap 'srun sleep 300' >/dev/null
sleep 3
as wsalice sbatch -J waitlic -N1 -L power:600 --comment testpower=100 --wrap 'srun sleep 60' >/dev/null
as wsbob sbatch -J waitnodes -N4 --wrap 'srun sleep 60' >/dev/null
as wsbob sbatch -H -J held -N1 -L power:100 --wrap 'srun sleep 60' >/dev/null
sleep 4
get /slurm/v0.0.38/jobs | pretty > "$OUT/rest-slurm-jobs.json"
get /slurm/v0.0.38/nodes | pretty > "$OUT/rest-slurm-nodes.json"
get /slurm/v0.0.38/licenses | pretty > "$OUT/rest-slurm-licenses.json" 2>/dev/null || echo '{"note": "GET /slurm/v0.0.38/licenses: not in 22.05"}' > "$OUT/rest-slurm-licenses.json"
get "/slurmdb/v0.0.38/jobs?start_time=now-1hour" | pretty > "$OUT/rest-slurmdb-jobs.json"
$WS testbed down --dir $DIR --purge >/dev/null
