# Copyright 2026, The tff_mixed Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.
"""Why Feddle's search adds nothing here: what the atlas's span holds.

In our tuned tables Feddle-ID ends level with FedBuff, its fallback, while
fine-tuning the same merge on the same server images (Fed+FT) gains 13-23
points. Feddle (Zhu et al., eqs. 4-6) can only move the model inside the
span of its normalized anchors abar_m: x + sum_m c_m abar_m. This study
runs in-domain Feddle at the tuned values and, at every `probe_every`-th
merge, with the atlas that merge searched (an observer of the run's merges),
measures from FedBuff's coefficients c' (Feddle's start):

*   `fedbuff`: the merge at c' (FedBuff's merge);
*   `search`: the coefficient search on the server images, as Feddle runs
    it (Adam, `SEARCH_EPOCHS` epochs of server batches), at each rate of
    `SEARCH_LRS` (the paper's grid and one step beyond): how far the server
    loss falls, and what that does to the validation and evaluation
    accuracy (held out from the search);
*   `oracle`: the same search on the evaluation images themselves. Never a
    method (it searches on test data): a bound on what the span holds for
    the test set;
*   `finetune`: Fed+FT's step from the merge at its tuned values, and its
    least-squares projection onto the span: how much of what fine-tuning
    finds lies in the anchors' directions.

Every run is a small JSON record; the section is rebuilt from them.
"""

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from experiments.hybrid_async import hybrid_config
from experiments.hybrid_async import hybrid_methods
from experiments.hybrid_async import hybrid_records
from experiments.hybrid_async import hybrid_runs
from experiments.hybrid_async import hybrid_tables
import tff_mixed
from tff_mixed.asynchronous import coefficient_search
from tff_mixed.asynchronous import feddle
from tff_mixed.asynchronous import feddle_atlas
from tff_mixed.asynchronous import server_data as server_data_lib
from tff_mixed.asynchronous import server_sgd
from tff_mixed.training import reports as reports_lib

SEARCH_LRS = (1e-4, 1e-3, 1e-2)
SEARCH_EPOCHS = 20  # The largest of the paper's server epochs {1, 10, 20}.
ORACLE_LR = 1e-2


class Sets(NamedTuple):
  """The image sets a probe scores on: (x, y) each."""
  server: tuple[np.ndarray, np.ndarray]
  validation: tuple[np.ndarray, np.ndarray]
  evaluation: tuple[np.ndarray, np.ndarray]


def span_coefficients(vector: np.ndarray, basis: np.ndarray) -> np.ndarray:
  """The least-squares coefficients of `vector` [P] on the rows of `basis`
  [M, P] (the flattened anchors)."""
  coef, *_ = np.linalg.lstsq(basis.T.astype(np.float64),
                             vector.astype(np.float64), rcond=None)
  return coef


def project(vector: np.ndarray, basis: np.ndarray) -> np.ndarray:
  """The least-squares projection of `vector` [P] onto the rows of `basis`
  [M, P] (the span of the flattened anchors)."""
  return basis.T.astype(np.float64) @ span_coefficients(vector, basis)


def _flat(weights) -> np.ndarray:
  return np.concatenate([np.asarray(w, np.float64).reshape([-1])
                         for w in weights])


def probe_merge(model: Any, weights, anchors: Sequence[Any],
                c_prior: np.ndarray, sets: Sets, finetune: Callable[..., Any],
                *, batch_size: int, seed: int,
                search_lrs: Sequence[float] = SEARCH_LRS,
                search_epochs: int = SEARCH_EPOCHS) -> dict[str, Any]:
  """What the span of one merge's normalized `anchors` holds (module doc).

  Args:
    model: The `FunctionalModel` (its loss is the search's objective).
    weights: The global model before the merge (trainable weights).
    anchors: The normalized anchors abar_m the merge searched over.
    c_prior: FedBuff's coefficients c', the search's start.
    sets: The server, validation and evaluation images.
    finetune: `finetune(weights) -> weights`: Fed+FT's step.
    batch_size: Server batch size of the searches.
    seed: Seeds the batch order.
    search_lrs: Adam rates of the server-data search.
    search_epochs: Epochs of each search (the oracle's too).

  Returns:
    A JSON-able dict: `fedbuff`, `search` (per rate), `oracle`, `finetune`,
    each with accuracies in [0, 1] (`validation`, `evaluation`), the server
    loss, and how far the coefficients moved (`move`: max |c - c'|).
  """
  scores = {name: hybrid_runs.evaluate_fn(*xy)
            for name, xy in sets._asdict().items()}

  def score(w):
    return {'server_loss': scores['server'](w)['loss'],
            'validation': scores['validation'](w)['accuracy'],
            'evaluation': scores['evaluation'](w)['accuracy']}

  def search(xy, lr):
    batches = server_data_lib.shuffled_batches(*xy, batch_size, seed)
    result = coefficient_search.search_coefficients(
        feddle.model_loss_fn(model), weights, anchors, c_prior, batches,
        steps=search_epochs * len(batches), learning_rate=lr,
        optimizer='adam')
    move = float(np.max(np.abs(result.coefficients - c_prior)))
    return dict(score(result.weights), move=move,
                negative=result.diagnostics.negative_share)

  start = feddle.merge_anchors(weights, anchors, c_prior)
  tuned = finetune(start)
  step = _flat(tuned) - _flat(start)
  basis = np.stack([_flat(a) for a in anchors])
  coef = span_coefficients(step, basis)
  norm = float(np.linalg.norm(step))
  in_span = (float(np.linalg.norm(basis.T @ coef)) / norm if norm > 0
             else 0.0)
  return {
      'fedbuff': score(start),
      'search': {f'{lr:g}': search(sets.server, lr) for lr in search_lrs},
      'oracle': search(sets.evaluation, ORACLE_LR),
      'finetune': dict(score(tuned), in_span=in_span),
      'projected': score(feddle.merge_anchors(start, anchors, coef)),
  }


class RunRecord(NamedTuple):
  """One probed Feddle run (a committed JSON record).

  Attributes:
    alpha, delay_std, seed: Which run.
    config: The run's configuration (a kept record is checked against it).
    probes: One dict per probed merge: `merge` (numbered from 1), `atlas`
      (its size), `staleness` (mean over the merged updates), `run_move`
      (max |c-hat - c'| of the run's own search), `prior` (mean |c'| of the
      merged updates, the scale of a move) and `probe_merge`'s dict.
    final_accuracy: The run's final evaluation accuracy (`final_metric`).
    seconds: Wall time of the run.
    data: The data, in words.
  """
  alpha: float
  delay_std: float
  seed: int
  config: dict[str, Any]
  probes: list[dict[str, Any]]
  final_accuracy: float
  seconds: float
  data: str


def record_name(setting: hybrid_config.Setting, seed: int) -> str:
  return f'feddle_id__a{setting.alpha:g}_d{setting.delay_std:g}_s{seed}'


def run_probed(data: hybrid_config.Data, config: hybrid_config.Config,
               finetune_config: hybrid_config.Config,
               setting: hybrid_config.Setting, seed: int, probe_every: int,
               cache: dict) -> RunRecord:
  """Trains in-domain Feddle for a setting and seed, probing its merges.

  `config` is Feddle's (its search values), `finetune_config` Fed+FT's
  (its server lr and epochs); the probes do not change the run.
  """
  config = config._replace(alpha=setting.alpha, delay_std=setting.delay_std)
  split = data.split
  sets = Sets((split.server_x, split.server_y),
              (split.validation_x, split.validation_y),
              (split.eval_x, split.eval_y))
  f = finetune_config
  probes, merges = [], [0]

  def observer(model):
    def finetune(weights):
      return server_sgd.server_sgd(
          model, weights, split.server_x, split.server_y,
          steps=hybrid_methods.server_steps(f, len(split.server_y)),
          batch_size=f.server_batch_size, learning_rate=f.server_sgd_lr,
          seed=seed, optimizer=f.server_optimizer)

    def probe(event):
      # Feddle's merge: the model before it, the atlas it searched, its
      # diagnostics (c' and c-hat) and the merged updates.
      weights, batch = event.before, event.updates
      atlas, diagnostics = event.diagnostics
      merges[0] += 1
      if merges[0] % probe_every:
        return
      anchors = feddle_atlas.normalize_anchors(atlas.anchors).anchors
      c_prior = diagnostics.init_coefficients
      probes.append(dict(
          merge=merges[0], atlas=len(anchors),
          staleness=float(np.mean([u.staleness for u in batch])),
          run_move=float(np.max(np.abs(diagnostics.coefficients - c_prior))),
          prior=float(np.mean(np.abs(c_prior[c_prior != 0])))
          if np.any(c_prior != 0) else 0.0,
          **probe_merge(model, weights, anchors, c_prior, sets, finetune,
                        batch_size=config.server_batch_size,
                        seed=seed + merges[0])))
      print(f'  merge {merges[0]}: fedbuff '
            f'{100 * probes[-1]["fedbuff"]["evaluation"]:.1f}%, oracle '
            f'{100 * probes[-1]["oracle"]["evaluation"]:.1f}%, fine-tuned '
            f'{100 * probes[-1]["finetune"]["evaluation"]:.1f}%', flush=True)

    return tff_mixed.AsyncObserver(on_merge=probe)

  run = hybrid_runs.run_method(hybrid_config.FEDDLE_ID, data, config, seed,
                               cache, delay_std=setting.delay_std,
                               observer_fn=observer)
  return RunRecord(setting.alpha, setting.delay_std, seed,
                   hybrid_records.config_record(config,
                                                hybrid_config.FEDDLE_ID),
                   probes, float(hybrid_tables.final_metric(run.rows)),
                   float(run.rows[-1].seconds) if run.rows else 0.0,
                   data.description)


def read_records(records_dir: str) -> list[RunRecord]:
  """Every record in `records_dir` (none if it does not exist)."""
  return hybrid_records.read_records(records_dir, RunRecord)


def run_study(data_fn, config: hybrid_config.Config,
              finetune_config: hybrid_config.Config,
              settings: Sequence[hybrid_config.Setting], seeds: Sequence[int],
              records_dir: str, probe_every: int) -> list[RunRecord]:
  """Runs every missing (setting, seed); returns all records.

  A kept record is reused if its configuration matches, else a ValueError
  names it.
  """
  reports_lib.make_directory(records_dir, 'records directory')
  cache = {}
  for seed in seeds:
    data_of_alpha = {}
    for setting in settings:
      name = record_name(setting, seed)
      want = hybrid_records.config_record(
          config._replace(alpha=setting.alpha, delay_std=setting.delay_std),
          hybrid_config.FEDDLE_ID)
      # Feddle's behaviour never changed: a record of another
      # configuration is an error, never outdated.
      if hybrid_records.kept_config(records_dir, name, want) is not None:
        continue
      if setting.alpha not in data_of_alpha:
        data_of_alpha[setting.alpha] = data_fn(seed, setting.alpha)
      print(f'feddle_id {setting.label} seed {seed}', flush=True)
      record = run_probed(data_of_alpha[setting.alpha], config,
                          finetune_config, setting, seed, probe_every, cache)
      hybrid_records.keep_record(records_dir, name, record)
  return read_records(records_dir)


# ----------------------------------------------------------------------------
# The report.


def _mean(values) -> float:
  values = [v for v in values if v == v]
  return float(np.mean(values)) if values else float('nan')


def _runs(records: Sequence[RunRecord], setting: hybrid_config.Setting) -> list:
  return [r for r in records
          if (r.alpha, r.delay_std) == (setting.alpha, setting.delay_std)]


def _probes(records: Sequence[RunRecord],
            setting: hybrid_config.Setting) -> list:
  return [p for r in _runs(records, setting) for p in r.probes]


def summary(probes: Sequence[Mapping[str, Any]]) -> dict[str, float]:
  """Means over probed merges, in accuracy points (x100) and differences
  to FedBuff's merge at c' (`d_` keys)."""
  def at(path, key):
    return [_dig(p, path)[key] for p in probes]

  base = {k: np.array(at(('fedbuff',), k)) for k in
          ('evaluation', 'validation', 'server_loss')}

  def delta(path, key):
    return _mean(100 * (np.array(at(path, key)) - base[key]))

  out = {
      'merges': len(probes),
      'staleness': _mean([p['staleness'] for p in probes]),
      'run_move': _mean([p['run_move'] for p in probes]),
      'prior': _mean([p['prior'] for p in probes]),
      'fedbuff': _mean(100 * base['evaluation']),
      'oracle': delta(('oracle',), 'evaluation'),
      'finetune': delta(('finetune',), 'evaluation'),
      'finetune_val': delta(('finetune',), 'validation'),
      'projected': delta(('projected',), 'evaluation'),
      'in_span': _mean(at(('finetune',), 'in_span')),
  }
  lrs = sorted(probes[0]['search'], key=float) if probes else []
  for lr in lrs:
    path = ('search', lr)
    out[f'loss_{lr}'] = _mean(np.array(at(path, 'server_loss')) -
                              base['server_loss'])
    out[f'val_{lr}'] = delta(path, 'validation')
    out[f'eval_{lr}'] = delta(path, 'evaluation')
    out[f'move_{lr}'] = _mean(at(path, 'move'))
  out['lrs'] = lrs
  return out


def _dig(probe, path):
  for key in path:
    probe = probe[key]
  return probe


def _f(value: float, signed: bool = True, digits: int = 1) -> str:
  if value != value:
    return 'n/a'
  return f'{value:+.{digits}f}' if signed else f'{value:.{digits}f}'


def span_table(records: Sequence[RunRecord],
               settings: Sequence[hybrid_config.Setting]) -> str:
  """One column per setting: the probes' means (`summary`)."""
  sums = [summary(_probes(records, s)) for s in settings]
  lrs = next((s['lrs'] for s in sums if s['lrs']), [])
  rows = [
      ('runs (seeds) / merges probed', [
          f'{len({r.seed for r in _runs(records, s)})} / {x["merges"]}'
          for s, x in zip(settings, sums)]),
      ('anchors in the atlas (mean)',
       [_f(_mean([p['atlas'] for p in _probes(records, s)]), False)
        for s in settings]),
      ('staleness of the merged updates (rounds, mean)',
       [_f(x['staleness'], False) for x in sums]),
      ("the run's own search (tuned): max |c - c'|, against mean |c'|",
       [f'{_f(x["run_move"], False, 4)} / {_f(x["prior"], False, 3)}'
        for x in sums]),
      ("FedBuff's merge at c' (Feddle's start): evaluation accuracy (%)",
       [_f(x['fedbuff'], False) for x in sums]),
  ]
  for lr in lrs:
    rows.append((f'search on the server images, Adam lr {lr}, '
                 f'{SEARCH_EPOCHS} epochs: server loss / validation / '
                 "evaluation, change from c' (max |c - c'|)",
                 [f'{_f(x[f"loss_{lr}"], True, 3)} / '
                  f'{_f(x[f"val_{lr}"])} / {_f(x[f"eval_{lr}"])} '
                  f'({_f(x[f"move_{lr}"], False, 2)})' for x in sums]))
  rows += [
      (f'bound: the same search on the evaluation images (lr {ORACLE_LR:g})'
       ': evaluation change', [_f(x['oracle']) for x in sums]),
      ("Fed+FT's step from the merge (tuned): evaluation / validation "
       'change', [f'{_f(x["finetune"])} / {_f(x["finetune_val"])}'
                  for x in sums]),
      ("its projection onto the anchors' span: evaluation change "
       '(share of its length in the span)',
       [f'{_f(x["projected"])} ({_f(100 * x["in_span"], False, 0)}%)'
        for x in sums]),
      ('final accuracy of the run (%)', [_f(_mean(
          [100 * r.final_accuracy for r in _runs(records, s)]), False)
                                        for s in settings]),
  ]
  head = '| | ' + ' | '.join(s.label for s in settings) + ' |'
  lines = [head, '| --- |' + ' --- |' * len(settings)]
  lines += [f'| {name} | ' + ' | '.join(cells) + ' |' for name, cells in rows]
  return '\n'.join(lines) + '\n'


def reading(records: Sequence[RunRecord],
            settings: Sequence[hybrid_config.Setting]) -> list[str]:
  """What the probes say, in sentences built from their means (each
  conclusion follows from the numbers it states)."""
  probes = [p for s in settings for p in _probes(records, s)]
  every = summary(probes)
  if not every['merges']:
    return ['No merge was probed.']
  server = sorted({r.config.get('server_size') for r in records} - {None})
  images = f'{server[0]} server images' if len(server) == 1 else (
      'the server images')
  lrs = every['lrs']
  best_val = max((every[f'val_{lr}'] for lr in lrs), default=float('nan'))
  best_lr = max(lrs, key=lambda lr: every[f'val_{lr}']) if lrs else 'n/a'
  most_loss = min((every[f'loss_{lr}'] for lr in lrs), default=float('nan'))
  share = every['run_move'] / every['prior'] if every['prior'] else 0.0
  lines = [
      f"* The tuned search moves the coefficients by at most "
      f"{_f(every['run_move'], False, 4)} from FedBuff's, whose size is "
      f"{_f(every['prior'], False, 3)} on average ({_f(100 * share, False)}"
      '%): ' + ('the tuned Feddle-ID stays on FedBuff\'s merge of its '
               'buffer, which is why it ends level with FedBuff.'
               if share < 0.05 else 'it leaves FedBuff\'s merge.'),
      f'* The probe searches (Adam, {SEARCH_EPOCHS} epochs, at each lr of '
      f'the table) lower the loss on the {images} (by up to '
      f'{_f(-most_loss, False, 3)} nats) and change the held-out validation '
      f'accuracy by {_f(best_val)} points at best (lr {best_lr}) in one '
      'merge.',
      f"* Searched on the evaluation images themselves, the span holds "
      f"{_f(every['oracle'])} points over FedBuff's merge; fine-tuning the "
      f"same merge on the {images} gains {_f(every['finetune'])} on the "
      f"evaluation images, and {_f(100 * every['in_span'], False, 0)}% of "
      "its step's length lies in the anchors' span (that part alone: "
      f"{_f(every['projected'])} points).",
  ]
  atlas = _mean([p['atlas'] for p in probes])
  ratio = (every['oracle'] / every['finetune'] if every['finetune'] > 0
           else float('nan'))
  best_eval = max((every[f'eval_{lr}'] for lr in lrs), default=float('nan'))
  reach = best_eval / every['oracle'] if every['oracle'] > 0 else float('nan')
  if ratio < 1:
    lines.append(
        f'* So the span of the {_f(atlas, False, 0)} anchors is the first '
        f'limit: its best model, chosen on the test images, gains '
        f'{_f(100 * ratio, False, 0)}% of what fine-tuning the same merge '
        f'gains; the probe searches on the server images reach '
        f'{_f(100 * reach, False, 0)}% of that bound at its best rate'
        + (', and the search at the selected rate almost none of it (it '
           'stays at c\').' if share < 0.05 else '.'))
  else:
    lines.append(
        '* So the span holds a model as good as fine-tuning\'s, and the '
        f'probe searches on the server images reach '
        f'{_f(100 * reach, False, 0)}% '
        'of it at its best rate.')
  by_delay = {s.delay_std: summary(_probes(records, s)) for s in settings}
  if len(by_delay) > 1:
    lines.append('* By delay level, the span\'s bound over FedBuff\'s merge: '
                 + ', '.join(f'N({d:g}) {_f(x["oracle"])}' for d, x in sorted(
                     by_delay.items())) + '; fine-tuning: ' + ', '.join(
                         f'N({d:g}) {_f(x["finetune"])}' for d, x in sorted(
                             by_delay.items())) + ' points.')
  return lines


def variant(records: Sequence[RunRecord]) -> str:
  """What sets these records apart from the plain study, for titles:
  the pretrained start and an atlas size other than the paper's."""
  parts = []
  if any('pretrained' in r.data for r in records):
    parts.append('from the pretrained start')
  sizes = sorted({r.config.get('feddle_atlas_size') for r in records} -
                 {None, 0})
  if sizes:
    parts.append('atlas of ' + ', '.join(str(a) for a in sizes))
  return ''.join('; ' + p for p in parts)


def results_markdown(records: Sequence[RunRecord],
                     settings: Sequence[hybrid_config.Setting], *, command: str,
                     machine: str, date: str) -> str:
  """The RESULTS.md section."""
  data_description = '; '.join(sorted({r.data for r in records}))
  return '\n'.join([
      '## What the span of Feddle\'s atlas holds (in-domain, tuned values'
      f'{variant(records)})',
      '',
      f'{date}; {machine}. Data: {data_description}.',
      '',
      'In our tuned tables Feddle-ID ends level with FedBuff while Fed+FT '
      'gains far more on the same server images (`hybrid_async_gaps`). '
      'In-domain Feddle runs '
      'at the tuned values; at probed merges, with the atlas the merge '
      "searched and from FedBuff's coefficients c', we measure what the "
      "span of the normalized anchors holds (experiments/hybrid_async/"
      'feddle_span_lib.py). Changes are accuracy points (loss: nats) from '
      "the merge at c', means over the probed merges.",
      '',
      span_table(records, settings),
      *reading(records, settings),
      '',
      f'Command: `{command}`',
      '',
  ])
