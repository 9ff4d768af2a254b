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
"""The MovieLens dual encoder experiment's settings (arXiv:2205.13655,
section 4.3): its scenarios, the hyperparameters of a run (`Config`, the
paper's tables 9-10 by default) and the model's forms.

The forms are those of the code the paper cites for its model (Ning et al.
2021, google-research/federated `dual_encoder/`): a ReLU context layer, the
squared hinge at margin 0.9 on clients, the Frobenius spreadout at the
server; the earlier forms stay available by name.
"""

import math
from collections.abc import Mapping
from typing import Any, NamedTuple, Optional

from experiments.common import grouping
from tff_mixed.models import dual_encoder

BASELINE = 'baseline'
PARALLEL_TRAINING = 'parallel_training'
ONE_WAY_GT = 'one_way_gt'
TWO_WAY_GT = 'two_way_gt'
ONE_WAY_GT_FEDADAM = 'one_way_gt_fedadam'
SCENARIOS = (BASELINE, PARALLEL_TRAINING, ONE_WAY_GT, TWO_WAY_GT,
             ONE_WAY_GT_FEDADAM)
# The |B_c| the mixed processes are built with. f_c, the spreadout, is a
# data-free regularizer of the table: no central batch is ever drawn.
CENTRAL_BATCH_SIZE = 1



class Config(NamedTuple):
  """The hyperparameters of a run (see the module docstring)."""

  rounds: int = 200
  clients_per_round: int = 100
  client_batch_size: int = 16
  client_steps: int = 10
  client_lr: float = 0.5
  # Parallel Training's eta = eta_c; tables 9-10's 0.5 by default. Its
  # clients step on f_f alone and its server on f_c alone, where the
  # baseline's clients step on w_f f_f + w_c f_c: its own eta lets PT take
  # the baseline's step (w_f eta), which alone did not keep its table from
  # collapsing (experiments/README.md).
  parallel_training_lr: float = 0.5
  fedadam_lr: float = 0.01
  federated_weight: float = 0.5
  central_weight: float = 0.5
  embedding_dim: int = 16
  context_length: int = 10
  # Rows each mixed client receives per round (federated_select's static
  # key count). None: `key_budget`'s B K (N + 1), every movie a round's K
  # batches can hold, so no client's ids are cut. The paper's n (~156 rows
  # on MovieLens 1M) is a mean: at 160, 31% of the clients there use more
  # and their extra ids carry no loss (experiments/README.md).
  keys_per_client: Optional[int] = None
  # The model's forms (`dual_encoder`'s constants), the cited model's by
  # default: its context layer, client loss and spreadout.
  context_layer: str = dual_encoder.RELU_DENSE
  client_loss: str = dual_encoder.SQUARED_HINGE
  # The client loss's margin; None: the form's own (`dual_encoder.MARGINS`).
  margin: Optional[float] = None
  spreadout_form: str = dual_encoder.FROBENIUS
  # lambda of the spreadout. The paper states none and the cited code
  # defaults to 0; 0.001 is its README's example, kept until a search on the
  # validation users (`movielens_reference.select_lambda`) selects one.
  spreadout_lambda: float = 0.001
  eval_every: int = 10
  max_eval_examples: Optional[int] = None
  seed: int = 0
  # Clients per CLIENTS member (`experiments.common.grouping`): 0 = one
  # group per core, 1 = the per-client path; the same results either way.
  clients_per_group: int = grouping.AUTO


class Costs(NamedTuple):
  """Per client and round: measured bytes and FLOPs, and the paper's terms.

  Attributes:
    scenario: The scenario.
    down_bytes: Bytes received (measured on the compiled computation).
    up_bytes: Bytes sent (measured; training metrics included).
    flops: Client training FLOPs per round: K times one local step measured
      by TF's profiler (`tff_mixed.core.flops.local_step_flops`).
    paper_comm_bytes: The paper's communication term: 2 N d (baseline),
      2 n d (PT), 3 n d (GT), in float32 bytes.
    paper_flops: The paper's computation term: K N^2 d / 2 (baseline),
      N^2 d / 2 (mixed FL, at the server).
  """

  scenario: str
  down_bytes: int
  up_bytes: int
  flops: float
  paper_comm_bytes: float
  paper_flops: float


def key_budget(config: Config, num_rows: Optional[int] = None) -> int:
  """The rows each mixed client receives per round: `keys_per_client`, or
  where that is None, B K (N + 1), the most distinct movies K batches of B
  examples with N context movies and a label can hold; at most `num_rows`
  (the table's) where given."""
  budget = config.keys_per_client
  if budget is None:
    budget = (config.client_batch_size * config.client_steps
              * (config.context_length + 1))
  return budget if num_rows is None else min(budget, num_rows)


def paper_comm_bytes(scenario: str, mean_keys: float, num_movies: int,
                     embedding_dim: int) -> float:
  """The paper's communication term per client and round (appendix B.3),
  float32 bytes: 2 N d for the baseline, 2 n d for PT, 3 n d for GT, with N
  movies and n = `mean_keys`, the mean distinct movies a client trains on.
  """
  rows = (num_movies if scenario == BASELINE else mean_keys)
  factor = 2 if scenario in (BASELINE, PARALLEL_TRAINING) else 3
  return factor * rows * embedding_dim * 4


def client_lr_of(config: Config, scenario: str) -> float:
  """eta of `scenario`'s clients (and of its central steps, eta_c = eta)."""
  return (config.parallel_training_lr if scenario == PARALLEL_TRAINING
          else config.client_lr)


def model_forms(config: Config) -> dict[str, Any]:
  """The config's forms as the keyword arguments that every builder of the
  model takes (`dual_encoder.build_dual_encoder`,
  `build_embedding_selection`): its context layer, client loss and margin.
  """
  return dict(context_layer=config.context_layer,
              client_loss_form=config.client_loss, margin=config.margin)


def model_kwargs(config: Config) -> dict[str, Any]:
  """`build_dual_encoder`'s keyword arguments for `config`'s model: its
  sizes, seed, forms, and the spreadout's form and lambda (weighted by the
  caller: 0 on mixed FL's clients, w_c on the baseline's)."""
  return dict(model_forms(config), embedding_dim=config.embedding_dim,
              context_length=config.context_length, seed=config.seed,
              spreadout_form=config.spreadout_form,
              spreadout_lambda=config.spreadout_lambda)


def check_forms(config: Config) -> None:
  """Raises ValueError for a form, margin or lambda the model cannot take
  (the message names it)."""
  dual_encoder.check_forms(config.context_layer, config.client_loss,
                           config.spreadout_form)
  if config.margin is not None and not math.isfinite(config.margin):
    raise ValueError(f'`margin` must be finite, got {config.margin}.')
  if not (math.isfinite(config.spreadout_lambda)
          and config.spreadout_lambda >= 0):
    raise ValueError('`spreadout_lambda` must be finite and >= 0, got '
                     f'{config.spreadout_lambda}.')


# How the sections name each form: the cited model's (Ning et al. 2021,
# google-research/federated `dual_encoder/`) or the earlier one.
_FORM_TEXT = {
    dual_encoder.RELU_DENSE: 'mean of the context movies, then Dense(d) '
                             'with ReLU (cited)',
    dual_encoder.IDENTITY_LINEAR: 'mean of the context movies, then an '
                                  'identity-initialized linear layer '
                                  '(earlier form)',
    dual_encoder.SQUARED_HINGE: 'squared hinge max(0, m - cos)^2 (cited)',
    dual_encoder.HINGE: 'hinge max(0, m - cos) (earlier form)',
    dual_encoder.FROBENIUS: 'lambda times the Frobenius norm of the '
                            'off-diagonal cosines of the rows (cited)',
    dual_encoder.MEAN_SQUARED: 'lambda times the mean of the squared '
                               'off-diagonal cosines of the rows (earlier '
                               'form)',
}


def forms_text(settings: Mapping[str, Any]) -> str:
  """The model's forms in words, from a record's settings or a `Config`'s
  `_asdict()`: context layer, client loss and margin, spreadout and
  lambda, each marked the cited model's or the earlier one."""
  margin = settings['margin']
  if margin is None:
    margin = dual_encoder.MARGINS[settings['client_loss']]
  return (f'context layer: {_FORM_TEXT[settings["context_layer"]]}; client '
          f'loss: {_FORM_TEXT[settings["client_loss"]]}, m = {margin:g}; '
          f'spreadout (f_c): {_FORM_TEXT[settings["spreadout_form"]]}, '
          f'lambda = {settings["spreadout_lambda"]:g}')
