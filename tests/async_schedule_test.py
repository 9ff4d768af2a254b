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
"""Tests for `tff_mixed.asynchronous.schedule` (simulated async arrivals)."""

import math

from absl.testing import absltest
from absl.testing import parameterized

from tff_mixed.asynchronous import schedule as schedule_lib


def _run_and_check(test, schedule):
  """Runs a schedule, checking its invariants with independent bookkeeping.

  Returns:
    (sampled (client, round) pairs, delivered Arrivals, never-arriving ones).
  """
  busy = {}  # client -> the Arrival announced when it was sampled
  sampled, delivered = [], []
  for k in range(1, schedule.num_rounds + 1):
    clients = schedule.sample(k)
    test.assertLen(set(clients), len(clients))
    test.assertEmpty(set(clients) & set(busy),
                     f'round {k}: sampled a busy client')
    announced = {a.client: a for a in schedule.pending()}
    for client in clients:
      arrival = announced[client]
      test.assertEqual(arrival.sampled_round, k)
      test.assertEqual(arrival.arrival_round, k + arrival.staleness)
      test.assertGreaterEqual(arrival.staleness, 0)
      busy[client] = arrival
      sampled.append((client, k))
    test.assertCountEqual(schedule.busy_clients(), busy)
    for arrival in schedule.arrivals(k):
      # Arrives exactly at the round announced at sampling time.
      test.assertEqual(arrival, busy.pop(arrival.client))
      test.assertEqual(arrival.arrival_round, k)
      delivered.append(arrival)
  never = schedule.never_arriving()
  test.assertCountEqual(never, busy.values())
  for arrival in never:
    test.assertGreater(arrival.arrival_round, schedule.num_rounds)
  return sampled, delivered, never


class AsyncScheduleTest(parameterized.TestCase):

  @parameterized.named_parameters(('sigma5', 5.0, False),
                                  ('sigma20', 20.0, True))
  def test_never_samples_busy_clients_and_delivers_each_update_once(
      self, delay_std, allow_fewer):
    # 5 per round with sigma = 20 keeps ~85 clients busy on average, more
    # than the 50 there are: only allow_fewer can run it.
    schedule = schedule_lib.AsyncSchedule(
        num_clients=50, clients_per_round=5, delay_std=delay_std,
        num_rounds=300, seed=7, allow_fewer=allow_fewer)
    sampled, delivered, never = _run_and_check(self, schedule)
    keys = [(a.client, a.sampled_round) for a in delivered + never]
    self.assertLen(set(keys), len(keys))
    self.assertCountEqual(keys, sampled)
    self.assertGreater(len(delivered), 300)
    # Delays really are spread (the run is not accidentally synchronous).
    self.assertGreater(max(a.staleness for a in delivered), delay_std)

  def test_sigma20_without_allow_fewer_reports_the_shortage(self):
    schedule = schedule_lib.AsyncSchedule(
        num_clients=50, clients_per_round=5, delay_std=20.0, num_rounds=300,
        seed=7)
    with self.assertRaisesRegex(ValueError, r'Round \d+: only \d+ idle '
                                r'clients, fewer than clients_per_round=5 '
                                r'\(\d+ of 50 clients are busy'):
      for k in range(1, 301):
        schedule.sample(k)
        schedule.arrivals(k)

  def test_same_seed_same_schedule_other_seed_different(self):
    args = dict(num_clients=50, clients_per_round=5, delay_std=5.0,
                num_rounds=100)
    first = schedule_lib.simulate(**args, seed=3)
    self.assertEqual(first, schedule_lib.simulate(**args, seed=3))
    self.assertNotEqual(first, schedule_lib.simulate(**args, seed=4))

  @parameterized.named_parameters(('sigma5', 5.0), ('sigma20', 20.0))
  def test_mean_delay_is_half_normal_mean(self, delay_std):
    schedule = schedule_lib.AsyncSchedule(
        num_clients=20000, clients_per_round=20000, delay_std=delay_std,
        num_rounds=100, seed=0)
    schedule.sample(1)
    delays = [a.staleness for a in schedule.pending()]
    self.assertLen(delays, 20000)
    expected = delay_std * math.sqrt(2.0 / math.pi)
    self.assertAlmostEqual(sum(delays) / len(delays), expected,
                           delta=0.03 * expected)

  def test_zero_delay_is_synchronous_in_sampling_order(self):
    events = schedule_lib.simulate(num_clients=10, clients_per_round=4,
                                   delay_std=0.0, num_rounds=5, seed=1)
    for event in events:
      self.assertEqual([a.client for a in event.arrivals],
                       list(event.sampled))
      for arrival in event.arrivals:
        self.assertEqual(arrival.sampled_round, event.round_num)
        self.assertEqual(arrival.staleness, 0)

  def test_client_arriving_at_k_can_be_sampled_at_k_plus_1(self):
    # 2 clients, 2 per round, no delay: both are sampled every round.
    events = schedule_lib.simulate(num_clients=2, clients_per_round=2,
                                   delay_std=0.0, num_rounds=3, seed=0)
    self.assertEqual([sorted(e.sampled) for e in events], [[0, 1]] * 3)

  def test_never_arriving_updates(self):
    schedule = schedule_lib.AsyncSchedule(
        num_clients=100, clients_per_round=10, delay_std=50.0, num_rounds=5,
        seed=2, check_delays=False)
    _, delivered, never = _run_and_check(self, schedule)
    self.assertNotEmpty(never)
    self.assertNotEmpty(delivered)
    self.assertLen(delivered + never, 50)

  def test_allow_fewer_samples_all_idle_clients(self):
    schedule = schedule_lib.AsyncSchedule(
        num_clients=3, clients_per_round=2, delay_std=1000.0, num_rounds=3,
        seed=0, allow_fewer=True, check_delays=False)
    first = schedule.sample(1)
    self.assertLen(first, 2)
    self.assertEmpty(schedule.arrivals(1))
    self.assertEqual(schedule.sample(2),
                     [c for c in range(3) if c not in first])
    self.assertEmpty(schedule.arrivals(2))
    self.assertEqual(schedule.sample(3), [])

  def test_first_round_with_shortage(self):
    self.assertEqual(
        schedule_lib.first_round_with_shortage(2, 2, 1000.0, 5, seed=0), 2)
    self.assertIsNone(
        schedule_lib.first_round_with_shortage(2, 2, 0.0, 5, seed=0))


class ValidationTest(parameterized.TestCase):

  @parameterized.named_parameters(
      ('no_clients', dict(num_clients=0), r'num_clients must be an integer '
       r'>= 1, got 0'),
      ('zero_per_round', dict(clients_per_round=0),
       r'clients_per_round must be an integer in \[1, num_clients=10\], got '
       r'0'),
      ('too_many_per_round', dict(clients_per_round=11),
       r'clients_per_round must be an integer in \[1, num_clients=10\], got '
       r'11'),
      ('negative_delay', dict(delay_std=-1.0),
       r'delay_std must be a finite number >= 0, got -1.0'),
      ('nan_delay', dict(delay_std=float('nan')),
       r'delay_std must be a finite number >= 0, got nan'),
      ('no_seed', dict(seed=None), r'seed must be an integer >= 0, got None'),
      ('no_rounds', dict(num_rounds=0),
       r'num_rounds must be an integer >= 1, got 0'),
      ('delays_too_long', dict(delay_std=20.0, num_rounds=60),
       r'delay_std=20.0 would often never arrive within num_rounds=60: 3 \* '
       r'delay_std = 60 >= num_rounds'),
  )
  def test_bad_setup(self, overrides, message):
    args = dict(num_clients=10, clients_per_round=2, delay_std=5.0,
                num_rounds=100, seed=0)
    args.update(overrides)
    with self.assertRaisesRegex(ValueError, message):
      schedule_lib.AsyncSchedule(**args)

  def test_check_delays_arrive(self):
    schedule_lib.check_delays_arrive(20.0, 61)
    schedule_lib.check_delays_arrive(0.0, 1)
    with self.assertRaisesRegex(ValueError, r'delay_std=5.0 would often '
                                r'never arrive within num_rounds=15'):
      schedule_lib.check_delays_arrive(5.0, 15)
    with self.assertRaisesRegex(ValueError, r'num_stds must be > 0, got 0'):
      schedule_lib.check_delays_arrive(5.0, 100, num_stds=0)

  def test_shortage_names_round_idle_and_busy(self):
    schedule = schedule_lib.AsyncSchedule(
        num_clients=2, clients_per_round=2, delay_std=1000.0, num_rounds=3,
        seed=0, check_delays=False)
    schedule.sample(1)
    schedule.arrivals(1)
    with self.assertRaisesRegex(
        schedule_lib.IdleClientShortageError,
        r'Round 2: only 0 idle clients, fewer than clients_per_round=2 \(2 of '
        r'2 clients are busy'):
      schedule.sample(2)

  def test_out_of_order_calls(self):
    schedule = schedule_lib.AsyncSchedule(
        num_clients=4, clients_per_round=2, delay_std=0.0, num_rounds=2,
        seed=0)
    with self.assertRaisesRegex(ValueError, r'arrivals\(1\) called out of '
                                r'order: the next call must be sample\(1\)'):
      schedule.arrivals(1)
    with self.assertRaisesRegex(ValueError, r'sample\(2\) called out of '
                                r'order: the next call must be sample\(1\)'):
      schedule.sample(2)
    schedule.sample(1)
    with self.assertRaisesRegex(ValueError, r'sample\(1\) called out of '
                                r'order: the next call must be '
                                r'arrivals\(1\)'):
      schedule.sample(1)
    schedule.arrivals(1)
    schedule.sample(2)
    schedule.arrivals(2)
    with self.assertRaisesRegex(ValueError, r'round_num=3 is past '
                                r'num_rounds=2'):
      schedule.sample(3)


if __name__ == '__main__':
  absltest.main()
