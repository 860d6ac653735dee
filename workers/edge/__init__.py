"""The worker's edge: every message is checked before Celery acts on it, so no message kills a worker.

Celery trusts what arrives on a queue. A protocol 2 body that is not ``[args, kwargs, embed]`` (a
dict, ``null``) fails to unpack in ``Request.__init__``; arguments, headers or properties nested a
few hundred levels deep make the parent's pickling for the pool child raise ``RecursionError``; on
the Redis transport an envelope that is not JSON fails in ``Channel._brpop_read``. All of these run
in the worker's parent, inside the event loop, so the exception ends the worker; with late acks and
``task_reject_on_worker_lost`` the message goes back on the queue and kills every replacement too.
An envelope without ``properties`` raises a KeyError while kombu builds its ``Message``, which the
Redis transport counts as a lost connection: the consumer reconnects and the message is gone. What
Celery does catch it answers badly for this pool: an unknown task name is stored as a
``NotRegistered`` FAILURE, a refused content type, a body too deep to decode or a bad ETA is never
answered, and those paths log the message body (``dump_body``), which holds the prompt.

Where the check sits, and why there:

* ``consumer.EdgeConsumer``, the worker's consumer class (the documented ``worker_consumer``
  setting), wraps the handler that ``Consumer.create_task_handler`` builds. That handler is the one function
  every task message passes through, on every broker, before Celery reads its headers, picks a
  strategy or builds a ``Request``. A consumer bootstep could only patch the consumer instance
  (the event loop builds the handler itself, as the last step starts); a custom ``Task.Strategy``
  or ``Task.Request`` and a wrapper around ``consumer.strategies`` only see messages whose headers
  are a dict and whose task name is registered, and they are per task (the maintenance tasks
  would need the same base).
* ``transport.RedisTransport`` is kombu's Redis transport with one change in its channel: the
  envelope (the JSON document LPUSHed onto the list) is decoded and checked before kombu builds a message
  from it, on the BRPOP path a worker consumes by. This is the only failure that happens before
  any consumer code runs, and it exists only on Redis: an AMQP broker delivers frames that py-amqp
  has already parsed. ``workers.app`` selects it for ``redis://`` and ``rediss://`` brokers
  (``broker_transport``).

One idea per module: ``inspection`` (what is wrong with a message, and the ``Refusal`` that says
so, built in one place), ``withholding`` (the prompt kept out of task events), ``eta`` (a
message's ETA moved from the pool's clock onto this host's), ``consumer`` (the consumer and its
handler wrapper) and ``transport`` (the Redis transport, a pinned copy of one kombu method).

A refused message is rejected without requeue (so it leaves the queue and, on Redis, the unacked
set), logged once on one line with its task id, queue and reason and never its body, and, when it
carries a task id and its task keeps results, answered in the result backend with a contract error
result in state SUCCESS: the producer's ``AsyncResult.get()`` returns ``status: "error"`` instead of
waiting forever. A message that passes every check and still makes Celery raise is refused the same
way. Codes: ``malformed_message``, ``unknown_task``, ``content_type_refused``, ``too_deep`` (the
contract's own code for nesting), ``bad_arguments``.

The embedded broker (``redis+socket://``, the demo's) is named by a URL prefix that kombu resolves
to its own transport whatever ``broker_transport`` says, so there only the consumer check applies.
"""
