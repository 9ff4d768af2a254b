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
"""Evaluation of a binary classifier: AUC of ROC, accuracy, loss, per label.

The label-imbalance experiments of Augenstein et al. (arXiv:2205.13655,
section 4.1, the smile classifier) report the AUC of ROC on an evaluation set
that mixes both labels, and the failure mode they study shows in each label's
accuracy: a model trained only on positives never predicts a negative.
"""

from collections.abc import Callable
from typing import Any, NamedTuple, Optional, Union

import numpy as np
from sklearn import metrics as sk_metrics
import tensorflow_federated as tff


class EvalMetrics(NamedTuple):
  """Metrics of a binary classifier on labeled examples.

  Attributes:
    accuracy: Fraction of examples classified correctly (logit > 0 means 1).
    loss: The model's loss on all examples (binary cross-entropy here).
    auc: Area under the ROC curve of the logits; NaN with a single label.
    positive_accuracy: Accuracy on label-1 examples (recall); NaN if none.
    negative_accuracy: Accuracy on label-0 examples (specificity); NaN if
      none.
    num_examples: Number of examples evaluated.
  """

  accuracy: float
  loss: float
  auc: float
  positive_accuracy: float
  negative_accuracy: float
  num_examples: int


def _label_accuracy(correct: np.ndarray, mask: np.ndarray) -> float:
  return float(np.mean(correct[mask])) if np.any(mask) else float('nan')


def evaluate(
    model: tff.learning.models.FunctionalModel,
    model_weights: Union[tff.learning.models.ModelWeights, tuple],
    eval_data: tuple[np.ndarray, np.ndarray],
    batch_size: Optional[int] = None,
    feature_fn: Optional[Callable[[np.ndarray], Any]] = None,
) -> EvalMetrics:
  """Evaluates a binary classifier on `(x, y)`.

  Args:
    model: A `tff.learning.models.FunctionalModel` whose `predict_on_batch`
      returns one logit per example (e.g.
      `tff_mixed.models.dense.build_binary_classifier`).
    model_weights: A `tff.learning.models.ModelWeights` (as returned by
      `process.get_model_weights(state)`) or a `(trainable, non_trainable)`
      pair.
    eval_data: `(x, y)` numpy arrays; `y` holds 0/1 labels, shape `[n]` or
      `[n, 1]`.
    batch_size: Examples per forward pass; `None`: all at once. Large eval
      sets (CelebA's ~20,000 images) need batches to bound memory.
    feature_fn: Optional map from a slice of `x` to model inputs, applied
      per batch (e.g. uint8 pixels to float features, so the whole set never
      exists as floats). `None`: `x` cast to float32.

  Returns:
    An `EvalMetrics`.

  Raises:
    ValueError: If `eval_data` is empty, `x` and `y` disagree on length, or
      `batch_size` is not positive.
  """
  x, y = eval_data
  labels = np.asarray(y, np.float32).reshape(-1)
  if len(labels) == 0 or len(x) != len(labels):
    raise ValueError('`eval_data` must be non-empty `(x, y)` arrays of one '
                     f'length, got {len(x)} and {len(labels)} rows.')
  if batch_size is None:
    batch_size = len(labels)
  if isinstance(batch_size, bool) or not isinstance(
      batch_size, (int, np.integer)) or batch_size < 1:
    raise ValueError(f'`batch_size` must be a positive int, got '
                     f'{batch_size!r}.')
  if feature_fn is None:
    feature_fn = lambda chunk: np.asarray(chunk, np.float32)
  if isinstance(model_weights, tff.learning.models.ModelWeights):
    trainable = model_weights.trainable
    non_trainable = model_weights.non_trainable
  else:
    trainable, non_trainable = model_weights
  weights = (tuple(trainable), tuple(non_trainable))
  logits = np.concatenate([
      np.asarray(model.predict_on_batch(
          weights, feature_fn(x[start:start + batch_size]), training=False))
      for start in range(0, len(labels), batch_size)])
  loss = float(model.loss(output=logits, label=labels[:, np.newaxis]))
  logits = np.asarray(logits, np.float64).reshape(-1)
  correct = (logits > 0) == (labels == 1)
  positives = labels == 1
  if np.all(positives) or not np.any(positives):
    auc = float('nan')  # ROC needs both labels.
  else:
    auc = float(sk_metrics.roc_auc_score(positives, logits))
  return EvalMetrics(
      accuracy=float(np.mean(correct)),
      loss=loss,
      auc=auc,
      positive_accuracy=_label_accuracy(correct, positives),
      negative_accuracy=_label_accuracy(correct, ~positives),
      num_examples=len(labels),
  )
