#!/usr/bin/env bash
# make results-advice: the algorithm advisor against measurement,
# one task at a time (ADVICE_TASKS, default
# digits,celeba,lm,lm_sites,movielens,movielens_1m).
#
# Per task, a Parallel Training probe prints and writes the advice
# (--advise_rounds, --advise_then=stop; skipped when its advice.json is
# there: the LM and MovieLens binaries keep theirs with their committed
# records, in docs/results/<task>/advice/), then experiments.advisor_validation.advice_validation_main reads
# the advice beside the curves of the task's full runs of PT, 1-way and
# 2-way GT at the same settings, writes docs/results/advice/<task>.json and
# rebuilds RESULTS.md's advisor_validation section from every record:
#   digits     the demo's settings, 3 seeds of 40 rounds run here (about a
#              minute each); target AUC 0.95, as in its section.
#   celeba     tables 5-6 (the binaries' defaults); the curves of
#              make results-celeba (run it first); target AUC 0.85, as in
#              its section.
#   lm         make results-lm's settings; the curves are its committed
#              records; target 0.95 x the lowest last-quarter mixed
#              accuracy of the three, as in its section.
#   lm_sites   make results-lm-sites' settings (the eight sites, S = 100);
#              its committed records, read as lm's (run make
#              results-lm-sites first).
#   movielens  make results-movielens's settings; its committed records;
#              test hinge loss, the metric of its section's convergence
#              claims (recall@10 curves coincide early and then fall),
#              reached at or below the highest last-quarter mean / 0.95.
#   movielens_1m  make results-movielens-1m's settings (the same tables 9-10
#              on ML-1M's users 1-2999) and its committed records, read as
#              movielens's (run make results-movielens-1m first).
# The Makefile runs this under scripts/with_worker_cleanup.sh.
set -euo pipefail

PY=${PY:-.venv/bin/python}
TASKS=${ADVICE_TASKS:-digits,celeba,lm,lm_sites,movielens,movielens_1m}
PROBE_ROUNDS=${ADVICE_PROBE_ROUNDS:-20}
VALIDATE=("$PY" -m experiments.advisor_validation.advice_validation_main)

# --curve flags: the same glob pattern, %s replaced by each algorithm.
curves() {
  local algorithm
  for algorithm in parallel_training one_way_gt two_way_gt; do
    echo "--curve=$algorithm:${1//%s/$algorithm}"
  done
}

need() {
  [ -e "$1" ] || { echo "error: $2" >&2; exit 1; }
}

# The records of PT, 1-way and 2-way GT in RECORDS (FILE: a name with %s for
# the algorithm), or an error naming COMMAND (%s: the algorithm) to run.
need_records() {  # RECORDS FILE COMMAND
  local algorithm
  for algorithm in parallel_training one_way_gt two_way_gt; do
    need "$1/${2//%s/$algorithm}" \
      "no $algorithm record in $1: run ${3//%s/$algorithm} first"
  done
}

# An LM task (TASK RECORDS TARGET ARGS_VARIABLE TITLE): the PT probe of
# make TARGET, its binary's flags in ARGS_VARIABLE (skipped when
# RECORDS/advice/advice.json is there; the target converts its data), then
# the curves of its committed records; mixed accuracy reached at 0.95 x the
# lowest last-quarter mean of the three, as in the task's section.
lm_task() {
  local task=$1 records=$2 target=$3 args_variable=$4 title=$5 advice
  need_records "$records" '%s.csv' "make $target SCENARIOS=%s"
  advice=$records/advice/advice.json
  [ -f "$advice" ] || \
    make --no-print-directory "$target" RUN= SCENARIOS=parallel_training \
      "$args_variable=--advise_rounds=$PROBE_ROUNDS --advise_then=stop"
  mapfile -t flags < <(curves "$records/%s.csv")
  "${VALIDATE[@]}" --task="$task" --title="$title" --advice_json="$advice" \
    "${flags[@]}" --metric=mixed_accuracy --target_share=0.95
}

# A MovieLens task (TASK TARGET RECORDS TITLE [FLAG...]): the PT probe of
# make TARGET (skipped when RECORDS/advice/advice.json is there), then the
# curves of its committed records; test hinge loss, the metric of its
# section's convergence claims (recall@10 curves coincide early and then
# fall), reached at or below the highest last-quarter mean / 0.95. FLAGs go
# to the validation.
movielens_task() {
  local task=$1 target=$2 records=$3 title=$4 advice
  shift 4
  need_records "$records" '%s_metrics.csv' "make $target"
  advice=$records/advice/advice.json
  [ -f "$advice" ] || \
    make --no-print-directory "$target" \
      ARGS="--advise_rounds=$PROBE_ROUNDS --advise_then=stop" RUN=
  mapfile -t flags < <(curves "$records/%s_metrics.csv")
  "${VALIDATE[@]}" --task="$task" --title="$title" --advice_json="$advice" \
    "${flags[@]}" --metric=hinge_loss --minimize --target_share=0.95 "$@"
}

for task in ${TASKS//,/ }; do
  echo "[results-advice] $task" >&2
  case "$task" in
    digits)
      out=outputs/advice/digits
      for seed in 0 1 2; do
        advise=()
        [ "$seed" = 0 ] && advise=(--advise_rounds="$PROBE_ROUNDS")
        "$PY" -m experiments.label_imbalance.label_imbalance_main \
          --scenarios=parallel_training,one_way_gt,two_way_gt --seed="$seed" \
          --output_dir="$out/seed$seed" "${advise[@]}"
      done
      mapfile -t flags < <(curves "$out/seed*/metrics.csv")
      "${VALIDATE[@]}" --task=digits \
        --title='Digits label imbalance (the demo), K = 10, S = 10, 40 rounds, 3 seeds' \
        --advice_json="$out/seed0/advice.json" "${flags[@]}" \
        --metric=eval_auc --target=0.95
      ;;
    celeba)
      runs=outputs/celeba_dev/reproduction/runs
      need outputs/celeba_dev/cache/celeba.sqlite \
        'no CelebA database: run make results-celeba first'
      need "$runs/two_way_gt" "no CelebA runs in $runs: run make results-celeba first"
      [ -f outputs/celeba_dev/advice/advice.json ] || \
        "$PY" -m experiments.celeba_smile.celeba_smile_main \
          --cache_dir=outputs/celeba_dev/cache \
          --output_dir=outputs/celeba_dev/advice --advise_rounds=30 \
          --advise_then=stop
      mapfile -t flags < <(curves "$runs/%s/seed*/metrics.csv")
      "${VALIDATE[@]}" --task=celeba_smile \
        --title='CelebA smile (real faces), tables 5-6, 1,000 rounds, 3 seeds' \
        --advice_json=outputs/celeba_dev/advice/advice.json "${flags[@]}" \
        --metric=eval_auc --target=0.85
      ;;
    lm)
      lm_task stackoverflow_wikipedia docs/results/stackoverflow_wikipedia \
        results-lm LM_ARGS \
        'Stack Exchange + WikiText-2 LM, make results-lm settings (K = 16, S = 10), 200 rounds, seed 0'
      ;;
    lm_sites)
      lm_task stackoverflow_wikipedia_sites \
        docs/results/stackoverflow_wikipedia_sites results-lm-sites LM_SITES_ARGS \
        'Eight Stack Exchange sites + WikiText-2 LM, make results-lm-sites settings (K = 16, S = 100), 500 rounds, seed 0'
      ;;
    movielens)
      movielens_task movielens results-movielens docs/results/movielens \
        'MovieLens 100K dual encoder, tables 9-10 (K = 10, S = 100), 2,000 rounds, seed 0' \
        --note='Its recall@10 ranks the algorithms the other way after round 500 (its section): the fastest on the hinge loss ends lowest.'
      ;;
    movielens_1m)
      movielens_task movielens_1m results-movielens-1m docs/results/movielens_1m \
        'MovieLens 1M (users 1-2999) dual encoder, tables 9-10 (K = 10, S = 100), 2,000 rounds, seed 0'
      ;;
    *)
      echo "error: unknown task $task in ADVICE_TASKS (digits, celeba, lm, lm_sites, movielens, movielens_1m)" >&2
      exit 1
      ;;
  esac
done
"${VALIDATE[@]}" --report_only --results_markdown=RESULTS.md
