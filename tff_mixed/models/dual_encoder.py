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

Left tower: a bag-of-words encoder (the mean embedding of the context movies)
followed by a dense context layer. Right tower: the embedding of the next
movie. Both towers share one embedding table. The score of a pair is the
cosine similarity of the two towers' vectors.

*   Client loss (f_i): a hinge loss on positive pairs only,
    mean_k max(0, margin - cos(c_k, e_{y_k})): it pulls a context towards the
    movie that followed it. Clients have no negatives.
*   Central loss (f_c): the spreadout regularizer (Zhang et al., 2017) of the
    whole table, the mean over pairs of distinct movies of
    (e_i . e_j)^2 on L2-normalized rows: it pushes unrelated movies apart.
    It needs the whole table, so mixed FL computes it at the server only.

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
DEFAULT_MARGIN = 1.0


def _normalize(x):
  return tf.math.l2_normalize(x, axis=-1, epsilon=1e-6)


def encode_context(embeddings, kernel, bias, context):
  """The left tower: mean of the context rows (-1 ignored), dense layer."""
  valid = context >= 0
  rows = tf.gather(embeddings, tf.maximum(context, 0))
  mask = tf.cast(valid, embeddings.dtype)[..., tf.newaxis]
  count = tf.maximum(tf.reduce_sum(mask, axis=-2), 1.0)
  bag = tf.reduce_sum(rows * mask, axis=-2) / count
  return tf.matmul(bag, kernel) + bias


def pair_scores(weights, context, label):
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
  context_vectors = encode_context(embeddings, kernel, bias, context)
  label_vectors = tf.gather(embeddings, tf.maximum(label, 0))
  scores = tf.reduce_sum(
      _normalize(context_vectors) * _normalize(label_vectors), axis=-1)
  return scores, tf.cast(label >= 0, tf.float32)


def hinge_loss(scores, valid, margin: float = DEFAULT_MARGIN):
  """mean over valid pairs of max(0, margin - score); 0 with none valid."""
  losses = tf.nn.relu(margin - scores) * valid
  return tf.math.divide_no_nan(tf.reduce_sum(losses), tf.reduce_sum(valid))


def spreadout(embeddings, first_row: int = 1):
  """Mean over ordered pairs i != j of (e_i . e_j)^2, rows L2-normalized.

  Args:
    embeddings: `[rows, d]`; rows before `first_row` (the padding row 0)
      are left out.
    first_row: The first movie row.

  Returns:
    A scalar.
  """
  e = _normalize(embeddings[first_row:])
  n = tf.cast(tf.shape(e)[0], tf.float32)
  # sum_{i,j} (e_i . e_j)^2 = ||E E^T||_F^2 = ||E^T E||_F^2: the d x d Gram
  # of the columns costs O(rows d^2) where the rows x rows Gram of the rows
  # costs O(rows^2 d), 100x more for MovieLens' 1,682 movies at d = 16 (the
  # baseline computes this on every client at every step). The diagonal
  # terms (e_i . e_i)^2 are the squared squared norms. `pairwise_spreadout`
  # is the direct form the tests compare this with.
  columns_gram = tf.matmul(e, e, transpose_a=True)
  squared_norms = tf.reduce_sum(tf.square(e), axis=-1)
  off_diagonal = tf.reduce_sum(tf.square(columns_gram)) - tf.reduce_sum(
      tf.square(squared_norms))
  return off_diagonal / tf.maximum(n * (n - 1.0), 1.0)


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
  """f_c for `tff_mixed.central_regularizer`: spreadout of the table."""
  del batch  # Data-free.
  trainable, _ = model_weights
  return spreadout(trainable[EMBEDDINGS_INDEX])


def initial_weights(num_rows: int, embedding_dim: int, seed: int = 0):
  rng = np.random.default_rng(seed)
  embeddings = rng.normal(0.0, 1.0 / np.sqrt(embedding_dim),
                          (num_rows, embedding_dim)).astype(np.float32)
  kernel = np.eye(embedding_dim, dtype=np.float32)
  bias = np.zeros([embedding_dim], np.float32)
  return (embeddings, kernel, bias)


def build_dual_encoder(
    num_rows: int,
    embedding_dim: int = 16,
    context_length: int = 10,
    *,
    margin: float = DEFAULT_MARGIN,
    spreadout_weight: float = 0.0,
    hinge_weight: float = 1.0,
    seed: int = 0,
    weights=None,
) -> tff.learning.models.FunctionalModel:
  """A dual encoder as a `tff.learning.models.FunctionalModel`.

  Batches are `(x, y)` with `x = (context int32[B, N], label int32[B])` row
  indices (-1: none) and `y = label`; `predict_on_batch` returns the pair
  scores, and the loss is `hinge_weight * hinge + spreadout_weight *
  spreadout(table)`. Mixed FL clients use `spreadout_weight=0` (the server
  computes the spreadout); the all-on-client baseline uses both, with the
  paper's w_f and w_c.

  Args:
    num_rows: Rows of the embedding table (movies + 1 for padding row 0), or
      a client's number of selected keys for its local slice.
    embedding_dim: d.
    context_length: N, context movies per example.
    margin: The hinge margin.
    spreadout_weight: Weight of the spreadout term in the model's own loss.
    hinge_weight: Weight of the hinge term.
    seed: Seeds the initial embeddings.
    weights: Optional initial `(embeddings, kernel, bias)` arrays.

  Returns:
    The `FunctionalModel`.
  """
  if num_rows < 2 or embedding_dim < 1 or context_length < 1:
    raise ValueError('`num_rows` must be >= 2 and `embedding_dim`, '
                     '`context_length` positive; got '
                     f'{num_rows}, {embedding_dim}, {context_length}.')
  if weights is None:
    weights = initial_weights(num_rows, embedding_dim, seed)
  weights = tuple(np.asarray(w, np.float32) for w in weights)
  with_spreadout = spreadout_weight != 0.0

  # Graph code as written: AutoGraph would only add tracing time.
  @tf.function(autograph=False)
  def predict_on_batch(model_weights, x, training=True):
    del training  # No dropout.
    trainable, _ = model_weights
    context, label = x
    scores, valid = pair_scores(trainable, context, label)
    if with_spreadout:
      # The regularizer rides along so that `loss` (which sees no weights)
      # can add it: one scalar, broadcast over the batch.
      reg = spreadout(trainable[EMBEDDINGS_INDEX])
    else:
      reg = tf.zeros([])
    return collections.OrderedDict(scores=scores, valid=valid,
                                   spreadout=reg + tf.zeros_like(scores))

  def loss(output, label, sample_weight=None):
    del label, sample_weight  # The label is inside the scores.
    value = hinge_weight * hinge_loss(output['scores'], output['valid'],
                                      margin)
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


def recall_at_k(weights, context, label, k: int = 10, first_row: int = 1):
  """Fraction of examples whose label is among the k top-scored movies.

  Scores every movie row from `first_row` on (cosine similarity with the
  context vector) for each example.

  Args:
    weights: `(embeddings, kernel, bias)` of the full table.
    context: int32 `[B, N]` movie rows (-1: padding).
    label: int32 `[B]` movie rows.
    k: The cut-off.
    first_row: The first movie row (row 0 is padding).

  Returns:
    A float.
  """
  embeddings, kernel, bias = weights
  c = _normalize(encode_context(embeddings, kernel, bias, context))
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
    *,
    margin: float = DEFAULT_MARGIN,
) -> embedding_select.EmbeddingSelection:
  """How mixed FL slices this model's table per client (federated_select).

  Args:
    num_rows: Rows of the full table (movies + 1).
    keys_per_client: Rows each client receives per round.
    embedding_dim: d.
    context_length: N.
    margin: The hinge margin (as in the full model).

  Returns:
    A `tff_mixed.EmbeddingSelection` for the builders' `embedding_selection`.
  """
  local = build_dual_encoder(max(keys_per_client, 2), embedding_dim,
                             context_length, margin=margin)
  return embedding_select.EmbeddingSelection(
      table_index=EMBEDDINGS_INDEX, num_rows=num_rows,
      keys_per_client=keys_per_client, local_model=local, ids_fn=_batch_ids,
      remap_fn=_remap_batch)
