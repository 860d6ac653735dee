from aipool.cli.worker_restarts import RestartBudget


def test_a_class_is_restarted_up_to_its_limit_within_the_window_and_again_after_it() -> None:
    budget = RestartBudget(limit=2, window_s=600)
    assert [budget.take(t) for t in (0, 10, 20)] == [True, True, False]
    assert budget.used == 2
    # The first restart leaves the window at 600 s: one more is allowed, then none again
    assert [budget.take(600), budget.take(601)] == [True, False]


def test_no_restart_at_all_with_a_limit_of_zero() -> None:
    assert RestartBudget(limit=0).take(0) is False
