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
"""The dual encoder of the movie task: hinge loss on clients, spreadout at the
server (Augenstein et al., arXiv:2205.13655, section 4.3, appendix B.2.3).

The paper cites Ning et al. (2021) for the model; its code (google-research/
federated, `dual_encoder/`: `movielens/model.py`, `losses.py`,
`keras_layers.py`) defines the forms used by default here:

*   Left tower: a bag-of-words encoder (the mean embedding of the context
    movies, padding left out) followed by a dense context layer of d units
    with ReLU (`RELU_DENSE`; Glorot-uniform kernel, zero bias). Right tower:
    the embedding of the next movie. Both towers share one embedding table
    (initialized uniformly in [-0.05, 0.05]). The score of a pair is the
    cosine similarity of the two towers' vectors.
*   Client loss (f_i): the squared hinge on positive pairs only,
    mean_k max(0, 0.9 - cos(c_k, e_{y_k}))^2 (`SQUARED_HINGE`): it pulls a
    context towards the movie that followed it, and stops pulling at a
    cosine of 0.9. Clients have no negatives.
*   Central loss (f_c): the spreadout regularizer (Zhang et al., 2017) of
    the whole table, lambda times the Frobenius norm of the off-diagonal
    cosine similarities of its rows, lambda sqrt(sum_{i != j} cos(e_i,
    e_j)^2) (`FROBENIUS`): it pushes unrelated movies apart. It needs the
    whole table, so mixed FL computes it at the server only. The paper
    gives no lambda.

The forms of the earlier model stay available by name: an identity-
initialized linear context layer (`IDENTITY_LINEAR`, table N(0, 1/d)), the
hinge max(0, 1 - cos) (`HINGE`, margin 1: never inactive) and the mean of
the squared cosines over pairs of rows (`MEAN_SQUARED`).

Inputs use *row indices* into the embedding table, with -1 for "no movie"
(context padding, or a movie a client did not receive): the same model then
serves the full table (rows = movie ids) and a client's slice of it (rows =
positions in the client's `federated_select` keys). Examples whose label is
-1 carry no loss.
"""

import collections

import numpy as np
import tensorflow as tf
import tensorflow_federated as tff

from tff_mixed.core import embedding_select
from tff_mixed.models import dense

# The weights: (embeddings [rows, d], context kernel [d, d], context bias [d]).
EMBEDDINGS_INDEX = 0

# The forms of the model (module docstring): the cited model's first.
RELU_DENSE = 'relu_dense'
IDENTITY_LINEAR = 'identity_linear'
CONTEXT_LAYERS = (RELU_DENSE, IDENTITY_LINEAR)
SQUARED_HINGE = 'squared_hinge'
HINGE = 'hinge'
CLIENT_LOSSES = (SQUARED_HINGE, HINGE)
FROBENIUS = 'frobenius'
MEAN_SQUARED = 'mean_squared'
SPREADOUTS = (FROBENIUS, MEAN_SQUARED)
# Each client loss's margin: the cited squared hinge's 0.9, the earlier
# hinge's 1.
MARGINS = {SQUARED_HINGE: 0.9, HINGE: 1.0}
DEFAULT_MARGIN = MARGINS[HINGE]
# The cited table's initializer: uniform in [-0.05, 0.05] (Keras').
_TABLE_INIT_LIMIT = 0.05


def _normalize(x):
  return tf.math.l2_normalize(x, axis=-1, epsilon=1e-6)


def check_forms(context_layer: str = RELU_DENSE,
                client_loss: str = SQUARED_HINGE,
                spreadout_form: str = FROBENIUS) -> None:
  """Raises ValueError naming a form that is not one of its choices."""
  for name, value, choices in (('context_layer', context_layer,
                                CONTEXT_LAYERS),
                               ('client_loss', client_loss, CLIENT_LOSSES),
                               ('spreadout_form', spreadout_form,
                                SPREADOUTS)):
    if value not in choices:
      raise ValueError(f'`{name}` must be one of {choices}, got {value!r}.')


def encode_context(embeddings, kernel, bias, context,
                   context_layer: str = RELU_DENSE):
  """The left tower: mean of the context rows (-1 ignored), dense layer
  (with ReLU for `RELU_DENSE`)."""
  valid = context >= 0
  rows = tf.gather(embeddings, tf.maximum(context, 0))
  mask = tf.cast(valid, embeddings.dtype)[..., tf.newaxis]
  count = tf.maximum(tf.reduce_sum(mask, axis=-2), 1.0)
  bag = tf.reduce_sum(rows * mask, axis=-2) / count
  dense_out = tf.matmul(bag, kernel) + bias
  return tf.nn.relu(dense_out) if context_layer == RELU_DENSE else dense_out


def pair_scores(weights, context, label, context_layer: str = RELU_DENSE):
  """Cosine similarity of each context with its label's embedding.

  Args:
    weights: `(embeddings, kernel, bias)`.
    context: int32 `[B, N]` row indices, -1 for none.
    label: int32 `[B]` row indices, -1 for none.

  Returns:
    `(scores float32[B], valid float32[B])`: `valid` is 0 where the label is
    -1 (no loss).
  """
  embeddings, kernel, bias = weights
  context_vectors = encode_context(embeddings, kernel, bias, context,
                                   context_layer)
  label_vectors = tf.gather(embeddings, tf.maximum(label, 0))
  scores = tf.reduce_sum(
      _normalize(context_vectors) * _normalize(label_vectors), axis=-1)
  return scores, tf.cast(label >= 0, tf.float32)


def hinge_loss(scores, valid, margin: float = DEFAULT_MARGIN):
  """mean over valid pairs of max(0, margin - score); 0 with none valid."""
  losses = tf.nn.relu(margin - scores) * valid
  return tf.math.divide_no_nan(tf.reduce_sum(losses), tf.reduce_sum(valid))


def squared_hinge_loss(scores, valid, margin: float = MARGINS[SQUARED_HINGE]):
  """mean over valid pairs of max(0, margin - score)^2; 0 with none valid
  (the cited model's hinge, margin 0.9)."""
  losses = tf.square(tf.nn.relu(margin - scores)) * valid
  return tf.math.divide_no_nan(tf.reduce_sum(losses), tf.reduce_sum(valid))


def client_loss(scores, valid, form: str = SQUARED_HINGE,
                margin: float | None = None):
  """The client loss `form` (`CLIENT_LOSSES`) at `margin` (default: the
  form's own, `MARGINS`)."""
  margin = MARGINS[form] if margin is None else margin
  if form == SQUARED_HINGE:
    return squared_hinge_loss(scores, valid, margin)
  return hinge_loss(scores, valid, margin)


def _off_diagonal_squared_cosines(embeddings, first_row: int):
  """`(sum over ordered pairs i != j of cos(e_i, e_j)^2, number of rows)`."""
  e = _normalize(embeddings[first_row:])
  n = tf.cast(tf.shape(e)[0], tf.float32)
  # sum_{i,j} (e_i . e_j)^2 = ||E E^T||_F^2 = ||E^T E||_F^2: the d x d Gram
  # of the columns costs O(rows d^2) where the rows x rows Gram of the rows
  # costs O(rows^2 d), 100x more for MovieLens' movies at d = 16 (the
  # baseline computes this on every client at every step). The diagonal
  # terms (e_i . e_i)^2 are the squared squared norms. `pairwise_spreadout`
  # is the direct form the tests compare this with.
  columns_gram = tf.matmul(e, e, transpose_a=True)
  squared_norms = tf.reduce_sum(tf.square(e), axis=-1)
  off_diagonal = tf.reduce_sum(tf.square(columns_gram)) - tf.reduce_sum(
      tf.square(squared_norms))
  return off_diagonal, n


def spreadout(embeddings, first_row: int = 1):
  """Mean over ordered pairs i != j of (e_i . e_j)^2, rows L2-normalized
  (`MEAN_SQUARED`, the earlier form).

  Args:
    embeddings: `[rows, d]`; rows before `first_row` (the padding row 0)
      are left out.
    first_row: The first movie row.

  Returns:
    A scalar.
  """
  off_diagonal, n = _off_diagonal_squared_cosines(embeddings, first_row)
  return off_diagonal / tf.maximum(n * (n - 1.0), 1.0)


def frobenius_spreadout(embeddings, first_row: int = 1):
  """The Frobenius norm of the off-diagonal cosine similarities of the rows,
  sqrt(sum_{i != j} cos(e_i, e_j)^2) (`FROBENIUS`, the cited form, before
  its lambda).

  Its gradient is that of the mean of the squares (`spreadout`) times
  n (n - 1) / (2 sqrt(sum)): about sqrt(d) n / 2 times larger for rows
  spread at random in d dimensions, thousands of times for MovieLens.
  """
  off_diagonal, _ = _off_diagonal_squared_cosines(embeddings, first_row)
  # Rows in d < n dimensions cannot all be orthogonal, so the sum is never 0
  # where it matters; the floor keeps sqrt's gradient finite anyway.
  return tf.sqrt(tf.maximum(off_diagonal, 1e-12))


def table_spreadout(embeddings, form: str = FROBENIUS,
                    spreadout_lambda: float = 1.0, first_row: int = 1):
  """The spreadout `form` (`SPREADOUTS`) of the table, times
  `spreadout_lambda`."""
  value = (frobenius_spreadout(embeddings, first_row) if form == FROBENIUS
           else spreadout(embeddings, first_row))
  return spreadout_lambda * value


def pairwise_spreadout(embeddings, first_row: int = 1):
  """`spreadout` computed from the rows x rows Gram matrix: the definition
  as written, O(rows^2 d), kept as the reference of the fast form."""
  e = _normalize(embeddings[first_row:])
  n = tf.cast(tf.shape(e)[0], tf.float32)
  gram = tf.matmul(e, e, transpose_b=True)
  off_diagonal = tf.reduce_sum(tf.square(gram)) - tf.reduce_sum(
      tf.square(tf.linalg.diag_part(gram)))
  return off_diagonal / tf.maximum(n * (n - 1.0), 1.0)


def spreadout_loss_fn(model_weights, batch):
  """f_c for `tff_mixed.central_regularizer`: the earlier `MEAN_SQUARED`
  spreadout of the table (`build_spreadout_loss_fn` for any form)."""
  del batch  # Data-free.
  trainable, _ = model_weights
  return spreadout(trainable[EMBEDDINGS_INDEX])


def build_spreadout_loss_fn(form: str = FROBENIUS,
                            spreadout_lambda: float = 1.0):
  """f_c for `tff_mixed.central_regularizer`: `table_spreadout` of the
  table, `form` and `spreadout_lambda` as given."""
  check_forms(spreadout_form=form)

  def loss_fn(model_weights, batch):
    del batch  # Data-free.
    trainable, _ = model_weights
    return table_spreadout(trainable[EMBEDDINGS_INDEX], form,
                           spreadout_lambda)

  return loss_fn


def initial_weights(num_rows: int, embedding_dim: int, seed: int = 0,
                    context_layer: str = RELU_DENSE):
  """`(embeddings, kernel, bias)` to start from, seeded.

  `RELU_DENSE` (the cited model): the table uniform in [-0.05, 0.05], the
  kernel Glorot-uniform; `IDENTITY_LINEAR` (the earlier): the table
  N(0, 1/d), the identity kernel. The bias is zero.
  """
  rng = np.random.default_rng(seed)
  if context_layer == RELU_DENSE:
    embeddings = rng.uniform(-_TABLE_INIT_LIMIT, _TABLE_INIT_LIMIT,
                             (num_rows, embedding_dim))
    limit = np.sqrt(6.0 / (2 * embedding_dim))
    kernel = rng.uniform(-limit, limit, (embedding_dim, embedding_dim))
  else:
    embeddings = rng.normal(0.0, 1.0 / np.sqrt(embedding_dim),
                            (num_rows, embedding_dim))
    kernel = np.eye(embedding_dim)
  bias = np.zeros([embedding_dim])
  return tuple(np.asarray(w, np.float32) for w in (embeddings, kernel, bias))


def build_dual_encoder(
    num_rows: int,
    embedding_dim: int = 16,
    context_length: int = 10,
    *,
    context_layer: str = RELU_DENSE,
    client_loss_form: str = SQUARED_HINGE,
    margin: float | None = None,
    spreadout_form: str = FROBENIUS,
    spreadout_lambda: float = 1.0,
    spreadout_weight: float = 0.0,
    hinge_weight: float = 1.0,
    seed: int = 0,
    weights=None,
) -> tff.learning.models.FunctionalModel:
  """A dual encoder as a `tff.learning.models.FunctionalModel`.

  Batches are `(x, y)` with `x = (context int32[B, N], label int32[B])` row
  indices (-1: none) and `y = label`; `predict_on_batch` returns the pair
  scores, and the loss is `hinge_weight * client_loss + spreadout_weight *
  table_spreadout(table)`. Mixed FL clients use `spreadout_weight=0` (the
  server computes the spreadout); the all-on-client baseline uses both,
  with the paper's w_f and w_c.

  Args:
    num_rows: Rows of the embedding table (movies + 1 for padding row 0), or
      a client's number of selected keys for its local slice.
    embedding_dim: d.
    context_length: N, context movies per example.
    context_layer: `RELU_DENSE` (cited) or `IDENTITY_LINEAR` (earlier).
    client_loss_form: `SQUARED_HINGE` (cited) or `HINGE` (earlier).
    margin: The hinge margin; None: the form's own (`MARGINS`).
    spreadout_form: `FROBENIUS` (cited) or `MEAN_SQUARED` (earlier).
    spreadout_lambda: lambda of the spreadout (`table_spreadout`).
    spreadout_weight: Weight of the spreadout term in the model's own loss.
    hinge_weight: Weight of the client loss term.
    seed: Seeds the initial weights (`initial_weights`).
    weights: Optional initial `(embeddings, kernel, bias)` arrays.

  Returns:
    The `FunctionalModel`.
  """
  if num_rows < 2 or embedding_dim < 1 or context_length < 1:
    raise ValueError('`num_rows` must be >= 2 and `embedding_dim`, '
                     '`context_length` positive; got '
                     f'{num_rows}, {embedding_dim}, {context_length}.')
  check_forms(context_layer, client_loss_form, spreadout_form)
  if weights is None:
    weights = initial_weights(num_rows, embedding_dim, seed, context_layer)
  weights = tuple(np.asarray(w, np.float32) for w in weights)
  with_spreadout = spreadout_weight != 0.0

  # Graph code as written: AutoGraph would only add tracing time.
  @tf.function(autograph=False)
  def predict_on_batch(model_weights, x, training=True):
    del training  # No dropout.
    trainable, _ = model_weights
    context, label = x
    scores, valid = pair_scores(trainable, context, label, context_layer)
    if with_spreadout:
      # The regularizer rides along so that `loss` (which sees no weights)
      # can add it: one scalar, broadcast over the batch.
      reg = table_spreadout(trainable[EMBEDDINGS_INDEX], spreadout_form,
                            spreadout_lambda)
    else:
      reg = tf.zeros([])
    return collections.OrderedDict(scores=scores, valid=valid,
                                   spreadout=reg + tf.zeros_like(scores))

  def loss(output, label, sample_weight=None):
    del label, sample_weight  # The label is inside the scores.
    value = hinge_weight * client_loss(output['scores'], output['valid'],
                                       client_loss_form, margin)
    if with_spreadout:
      value += spreadout_weight * output['spreadout'][0]
    return value

  initialize, update, finalize = dense.mean_metric_fns(with_accuracy=False)

  def update_metrics(state, labels, batch_output, sample_weight=None):
    return update(state, labels, batch_output, sample_weight)

  return tff.learning.models.FunctionalModel(
      initial_weights=(weights, ()),
      predict_on_batch_fn=predict_on_batch,
      loss_fn=loss,
      metrics_fns=(initialize, update_metrics, finalize),
      input_spec=(
          (tf.TensorSpec([None, context_length], tf.int32),
           tf.TensorSpec([None], tf.int32)),
          tf.TensorSpec([None], tf.int32),
      ),
  )


def recall_at_k(weights, context, label, k: int = 10, first_row: int = 1,
                context_layer: str = RELU_DENSE):
  """Fraction of examples whose label is among the k top-scored movies.

  Scores every movie row from `first_row` on (cosine similarity with the
  context vector) for each example: the cited code's global recall, over
  all movies, nothing excluded.

  Args:
    weights: `(embeddings, kernel, bias)` of the full table.
    context: int32 `[B, N]` movie rows (-1: padding).
    label: int32 `[B]` movie rows.
    k: The cut-off.
    first_row: The first movie row (row 0 is padding).
    context_layer: The model's context layer.

  Returns:
    A float.
  """
  embeddings, kernel, bias = weights
  c = _normalize(encode_context(embeddings, kernel, bias, context,
                                context_layer))
  e = _normalize(embeddings[first_row:])
  scores = tf.matmul(c, e, transpose_b=True)
  top = tf.math.top_k(scores, k=k).indices + first_row
  hits = tf.reduce_any(tf.equal(top, label[:, tf.newaxis]), axis=-1)
  return float(tf.reduce_mean(tf.cast(hits, tf.float32)))


def model_batch(element):
  """A dataset element `{context, label}` (movie ids, 0 = padding) as the
  model's `((context rows, label rows), label rows)` with -1 for padding."""
  context = tf.cast(element['context'], tf.int32)
  label = tf.cast(element['label'], tf.int32)
  context = tf.where(context > 0, context, -1)
  return (context, label), label


def _batch_ids(batch):
  (context, label), _ = batch
  return tf.concat([tf.reshape(context, [-1]), tf.reshape(label, [-1])], 0)


def _remap_batch(batch, lookup):
  (context, label), _ = batch
  local_label = lookup(label)
  return (lookup(context), local_label), local_label


def build_embedding_selection(
    num_rows: int,
    keys_per_client: int,
    embedding_dim: int = 16,
    context_length: int = 10,
    **forms,
) -> embedding_select.EmbeddingSelection:
  """How mixed FL slices this model's table per client (federated_select).

  Args:
    num_rows: Rows of the full table (movies + 1).
    keys_per_client: Rows each client receives per round.
    embedding_dim: d.
    context_length: N.
    **forms: The full model's `context_layer`, `client_loss_form` and
      `margin` (`build_dual_encoder`).

  Returns:
    A `tff_mixed.EmbeddingSelection` for the builders' `embedding_selection`.
  """
  unknown = set(forms) - {'context_layer', 'client_loss_form', 'margin'}
  if unknown:
    raise TypeError(f'Unknown arguments {sorted(unknown)}.')
  local = build_dual_encoder(max(keys_per_client, 2), embedding_dim,
                             context_length, **forms)
  return embedding_select.EmbeddingSelection(
      table_index=EMBEDDINGS_INDEX, num_rows=num_rows,
      keys_per_client=keys_per_client, local_model=local, ids_fn=_batch_ids,
      remap_fn=_remap_batch)
