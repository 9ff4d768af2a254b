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
"""Reference rows of the MovieLens section: a floor, a ceiling, a lambda.

A federated scenario's recall@10 means little alone: at the paper's
settings every scenario once ended at 0.02, below what ranking movies by
popularity gives. Two rows, measured with the scenarios' own evaluation
(the test users' examples, `movielens_process.evaluate`'s recall@10 over all
movies), bound what the scenarios should reach:

*   the popularity floor (`popularity_recall`): the 10 movies most often a
    label among the training users' examples, the same 10 for every test
    example. A model that learns anything about the next movie beats it.
*   the central ceiling (`train_central`): the same model and objective as
    the baseline's clients (`movielens_process.client_model`: w_f client loss +
    w_c lambda spreadout over the whole table, the config's forms), trained
    centrally on the union of the training users' examples with Adam at
    batch 16 (the cited code's centralized launcher: Adam, learning rate
    0.01, batch 16), evaluated after every epoch. The ceiling is its best
    test recall@10 over the epochs: picked on the test users, so a
    generous bound, which is what a ceiling should be.

A third row separates the optimizer from federation: the same central
training with the paper's optimizer instead of Adam, SGD at the clients'
eta (`Config.client_lr`, 0.5 in tables 9-10) and the same batch of 16, for
as many epochs (`train_central(..., optimizer=SGD)`). One federated round
of S = 100 clients of K = 10 steps averages its clients' steps, so 2,000
rounds move the model about as far as 20,000 central SGD steps, about one
epoch of half of MovieLens 1M's training examples: this row shows where SGD
stands after one epoch and after the rest.

The paper states no lambda for the spreadout (the cited code defaults to
0; its README's examples use 0.001). `search_lambda` trains the central
model once per lambda of a grid and keeps the one whose recall@10 on the
VALIDATION users' examples after the last epoch is best (ties: the
smaller). The search is central because that is cheap (minutes a lambda,
where one federated scenario takes hours), and it stands in for the
federated scenarios' lambda because the central model is the same model
with the same objective: lambda weighs the same spreadout against the
same client loss, only the optimizer and the data's partition differ.

Each row is kept as a small JSON record (`movielens_records`, under
`<records_dir>/reference/`) with the settings it was made with, read back
when a run's settings are the same.
"""

from collections.abc import Callable, Sequence
import math
import time
from typing import Any

from absl import logging
import numpy as np
import tensorflow as tf

from experiments.common import results as results_lib
from experiments.common import run_store
from experiments.movielens import movielens_config
from experiments.movielens import movielens_lib
from experiments.movielens import movielens_process
from experiments.movielens import movielens_records as records_lib
from tff_mixed.models import dual_encoder
from tff_mixed.tasks import movielens

K = 10
# train_central's optimizers.
ADAM = 'adam'
SGD = 'sgd'
# The cited centralized launcher's optimizer settings: Adam, lr 0.01, and
# its batch, which is also the clients' |B_i| (table 10).
LEARNING_RATE = 0.01
BATCH_SIZE = 16
# The ceiling's and the search's epochs: on half of MovieLens 1M (310,868
# training examples) an epoch is 19,430 steps.
EPOCHS = 10
# A default grid of lambdas around the cited README's 0.001.
LAMBDAS = (1e-4, 1e-3, 1e-2, 1e-1)

# The settings (`movielens_lib.record_settings`) each row depends on.
_POPULARITY_SETTINGS = ('data', 'context_length', 'seed',
                        'max_eval_examples')
_MODEL_SETTINGS = _POPULARITY_SETTINGS + (
    'embedding_dim', 'context_layer', 'client_loss', 'margin',
    'spreadout_form', 'spreadout_lambda', 'federated_weight',
    'central_weight')


def popularity_ranking(train_labels: np.ndarray, k: int = K) -> np.ndarray:
  """The `k` movies most often in `train_labels`, most frequent first
  (among equal counts the smaller id first)."""
  movies, counts = np.unique(np.asarray(train_labels), return_counts=True)
  return movies[np.lexsort((movies, -counts))[:k]]


def popularity_recall(train_labels: np.ndarray, test_labels: np.ndarray,
                      k: int = K) -> float:
  """Recall@k of ranking every test example's candidates by popularity:
  the share of `test_labels` among `popularity_ranking(train_labels, k)`.
  """
  test_labels = np.asarray(test_labels)
  if not test_labels.size:
    raise ValueError('No test label to score.')
  top = popularity_ranking(train_labels, k)
  return float(np.mean(np.isin(test_labels, top)))


def _train_arrays(data: movielens.MovieLensData):
  return movielens_process.user_arrays(data, data.train_user_ids)


def _now() -> dict[str, str]:
  return dict(date=results_lib.utc_now(),
              machine=results_lib.machine_description())


def popularity_row(data: movielens.MovieLensData,
                   config: movielens_config.Config, settings: dict[str, Any],
                   command: str = '') -> records_lib.PopularityRecord:
  """The popularity floor on `data`: training users' labels counted, the
  scenarios' test examples (`movielens_process.evaluation_arrays`) scored."""
  _, train_labels = _train_arrays(data)
  _, test_labels = movielens_process.evaluation_arrays(data, config)
  return records_lib.PopularityRecord(
      recall_at_10=popularity_recall(train_labels, test_labels),
      top_movies=[int(m) for m in popularity_ranking(train_labels)],
      train_examples=len(train_labels), test_examples=len(test_labels),
      settings=settings, date=results_lib.utc_now(), command=command)


def train_central(data: movielens.MovieLensData,
                  config: movielens_config.Config, evaluation_arrays, *,
                  epochs: int = EPOCHS, learning_rate: float = LEARNING_RATE,
                  batch_size: int = BATCH_SIZE,
                  optimizer: str = ADAM) -> list[dict[str, Any]]:
  """Trains the baseline's model centrally; its evaluation after each epoch.

  The model is the baseline clients' (`movielens_process.client_model`): the
  whole table, w_f client loss + w_c lambda spreadout, `config`'s forms,
  seed and initial weights. It trains with Adam (or plain SGD,
  `optimizer=SGD`) on every training user's
  examples, shuffled each epoch (seeded by `config.seed`), `batch_size`
  at a step; an epoch is one `tf.function` looping over a `tf.data`
  pipeline, so it costs TF's time, not Python's.

  Args:
    data: The data.
    config: The model and loss (forms, lambda, w_f, w_c, d, seed).
    evaluation_arrays: `(contexts, labels)` to evaluate on
      (`movielens_process.evaluation_arrays`).
    epochs: Passes over the training examples.
    learning_rate: The optimizer's.
    batch_size: Examples a step.
    optimizer: `ADAM` or `SGD`.

  Returns:
    Per epoch, epoch 0 (the initial model) first: `epoch`, `train_loss`
    (the mean of its steps' losses; None at 0) and
    `movielens_process.evaluate`'s `recall_at_10`, `hinge_loss` on
    `evaluation_arrays`.
  """
  if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
    raise ValueError(f'`epochs` must be a positive int, got {epochs!r}.')
  if not (math.isfinite(learning_rate) and learning_rate > 0):
    raise ValueError('`learning_rate` must be positive, got '
                     f'{learning_rate}.')
  if optimizer not in (ADAM, SGD):
    raise ValueError(f'`optimizer` must be {ADAM!r} or {SGD!r}, got '
                     f'{optimizer!r}.')
  model = movielens_process.client_model(movielens_config.BASELINE, data,
                                         config)
  weights = [tf.Variable(w) for w in model.initial_weights[0]]
  steps_of = (tf.keras.optimizers.Adam if optimizer == ADAM
              else tf.keras.optimizers.SGD)(learning_rate)
  # The optimizer's slots exist before the loop is traced: a tf.function
  # may not create variables inside a loop.
  steps_of.build(weights)
  contexts, labels = _train_arrays(data)
  dataset = tf.data.Dataset.from_tensor_slices(
      dict(context=contexts, label=labels)).shuffle(
          len(labels), seed=config.seed, reshuffle_each_iteration=True
      ).batch(batch_size).map(dual_encoder.model_batch).prefetch(
          tf.data.AUTOTUNE)

  @tf.function
  def train_epoch():
    total = tf.constant(0.0)
    steps = tf.constant(0.0)
    for x, y in dataset:
      with tf.GradientTape() as tape:
        loss = model.loss(model.predict_on_batch((weights, ()), x), y)
      steps_of.apply_gradients(zip(tape.gradient(loss, weights), weights))
      total += loss
      steps += 1.0
    return total / steps

  def evaluation():
    return movielens_process.evaluate(
        (tuple(w.numpy() for w in weights), ()), *evaluation_arrays, config)

  rows = [dict(epoch=0, train_loss=None, **evaluation())]
  for epoch in range(1, epochs + 1):
    start = time.perf_counter()
    loss = float(train_epoch())
    rows.append(dict(epoch=epoch, train_loss=loss, **evaluation()))
    logging.info('central epoch %d/%d (%.1f s): loss %.5f, recall@10 %.4f',
                 epoch, epochs, time.perf_counter() - start, loss,
                 rows[-1]['recall_at_10'])
  return rows


def best_row(record: records_lib.CentralRecord) -> dict[str, Any]:
  """The ceiling: the epoch (after the first) of the best test recall@10
  (the earliest among equals)."""
  return max(record.rows[1:], key=lambda r: (r['recall_at_10'], -r['epoch']))


def select_lambda(lambdas: Sequence[float],
                  score: Callable[[float], float]) -> tuple[float,
                                                            list[float]]:
  """`(selected, scores)`: every lambda's `score` (higher is better), and
  the lambda of the best, the smaller one among equal scores. A score that
  is not finite (a diverged run) loses to every finite one."""
  lambdas = [float(x) for x in lambdas]
  if not lambdas or len(set(lambdas)) != len(lambdas) or not all(
      math.isfinite(x) and x >= 0 for x in lambdas):
    raise ValueError('The lambdas must be distinct finite numbers >= 0, got '
                     f'{lambdas}.')
  scores = [float(score(x)) for x in lambdas]
  best = min(range(len(lambdas)), key=lambda i: (
      -scores[i] if math.isfinite(scores[i]) else math.inf, lambdas[i]))
  return lambdas[best], scores


def settings_of(kind: str, config: movielens_config.Config, description: str,
                *, epochs: int = EPOCHS, learning_rate: float = LEARNING_RATE,
                lambdas: Sequence[float] = ()) -> dict[str, Any]:
  """What the record `kind` (`records_lib.POPULARITY`, `CENTRAL`,
  `LAMBDA_SEARCH`, `CENTRAL_SGD`) depends on: the settings of `config` and
  the data that change its numbers, and the central training's own (for
  `CENTRAL_SGD`, SGD at `config.client_lr`, not `learning_rate`)."""
  settings = movielens_lib.record_settings(config, description)
  if kind == records_lib.POPULARITY:
    return {k: settings[k] for k in _POPULARITY_SETTINGS}
  kept = {k: settings[k] for k in _MODEL_SETTINGS}
  kept.update(central_epochs=epochs, central_learning_rate=learning_rate,
              central_batch_size=BATCH_SIZE)
  if kind == records_lib.CENTRAL_SGD:
    kept.update(central_learning_rate=float(config.client_lr),
                central_optimizer=SGD)
  if kind == records_lib.LAMBDA_SEARCH:
    del kept['spreadout_lambda']
    kept['spreadout_lambdas'] = [float(x) for x in lambdas]
  return kept


def _kept_or_made(records_dir: str, name: str, settings: dict[str, Any],
                  make: Callable[[], Any]):
  """The record `name` of `settings`: read back if there is one, else
  made and written (over one of other settings, which the log names)."""
  run_store.kept_or_made(records_lib.reference_store(records_dir), name,
                         settings, lambda: make()._asdict(),
                         on_differs=run_store.REPLACE)
  return records_lib.read_reference(records_dir, name)


def search_lambda(data: movielens.MovieLensData,
                  config: movielens_config.Config, description: str,
                  records_dir: str, lambdas: Sequence[float] = LAMBDAS, *,
                  epochs: int = EPOCHS, learning_rate: float = LEARNING_RATE,
                  command: str = '') -> records_lib.LambdaSearchRecord:
  """The lambda search on the validation users (module docstring), read
  back from `records_dir` if made before with the same settings."""
  settings = settings_of(records_lib.LAMBDA_SEARCH, config, description,
                         epochs=epochs, learning_rate=learning_rate,
                         lambdas=lambdas)
  validation = movielens_process.evaluation_arrays(data, config,
                                                   data.validation_user_ids)

  def make():
    start = time.perf_counter()
    curves = {}

    def score(spreadout_lambda):
      rows = train_central(
          data, config._replace(spreadout_lambda=spreadout_lambda),
          validation, epochs=epochs, learning_rate=learning_rate)
      curves[spreadout_lambda] = [r['recall_at_10'] for r in rows]
      logging.info('lambda %g: validation recall@10 %.4f', spreadout_lambda,
                   rows[-1]['recall_at_10'])
      return rows[-1]['recall_at_10']

    selected, scores = select_lambda(lambdas, score)
    return records_lib.LambdaSearchRecord(
        lambdas=[float(x) for x in lambdas], scores=scores,
        selected=selected,
        validation_recalls=[curves[float(x)] for x in lambdas],
        settings=settings, seconds=time.perf_counter() - start,
        command=command, **_now())

  return _kept_or_made(records_dir, records_lib.LAMBDA_SEARCH, settings,
                       make)


def reference_rows(data: movielens.MovieLensData,
                   config: movielens_config.Config, description: str,
                   records_dir: str, *, epochs: int = EPOCHS,
                   learning_rate: float = LEARNING_RATE,
                   command: str = '') -> records_lib.References:
  """The popularity floor, the central ceiling and the central SGD row of
  `config`, each read back from `records_dir` if made before with the same
  settings, else made and written there; with the lambda search's record if
  there is one."""
  popularity_settings = settings_of(records_lib.POPULARITY, config,
                                    description)
  popularity = _kept_or_made(
      records_dir, records_lib.POPULARITY, popularity_settings,
      lambda: popularity_row(data, config, popularity_settings, command))
  central_settings = settings_of(records_lib.CENTRAL, config, description,
                                 epochs=epochs, learning_rate=learning_rate)

  def make_central():
    start = time.perf_counter()
    rows = train_central(data, config,
                         movielens_process.evaluation_arrays(data, config),
                         epochs=epochs, learning_rate=learning_rate)
    return records_lib.CentralRecord(
        rows=rows, settings=central_settings,
        seconds=time.perf_counter() - start, command=command, **_now())

  central = _kept_or_made(records_dir, records_lib.CENTRAL, central_settings,
                          make_central)
  sgd_settings = settings_of(records_lib.CENTRAL_SGD, config, description,
                             epochs=epochs)

  def make_sgd():
    start = time.perf_counter()
    rows = train_central(data, config,
                         movielens_process.evaluation_arrays(data, config),
                         epochs=epochs, learning_rate=config.client_lr,
                         optimizer=SGD)
    return records_lib.CentralRecord(
        rows=rows, settings=sgd_settings,
        seconds=time.perf_counter() - start, command=command, **_now())

  central_sgd = _kept_or_made(records_dir, records_lib.CENTRAL_SGD,
                              sgd_settings, make_sgd)
  return records_lib.References(
      popularity, central,
      records_lib.read_reference(records_dir, records_lib.LAMBDA_SEARCH),
      central_sgd)
