"""redis-py (Debian's python3-redis) against idforge: the forms an application uses for
an increment, then what idforge refuses. Prints one JSON object for check.py.

Usage: redis_py_client.py PORT STRIPED_PORT TAG
"""
import json
import sys

import redis


def error_of(call):
    try:
        call()
    except redis.ResponseError as e:  # ExecAbortError is one too
        return str(e)
    return None


def main():
    port, striped_port, tag = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    r = redis.Redis(host="127.0.0.1", port=port, socket_timeout=10)
    results = {}
    results["incr"] = r.incr(tag)  # INCRBY tag 1
    results["incr_by_5"] = r.incr(tag, 5)
    pipe = r.pipeline()  # a transaction by default: MULTI ... EXEC
    pipe.incr(tag).incrby(tag, 3).incr(tag)
    results["transaction"] = pipe.execute()
    pipe = r.pipeline(transaction=False)
    pipe.incr(tag).incrby(tag, 2)
    results["pipeline"] = pipe.execute()

    errors = {
        "incr_by_0": error_of(lambda: r.incrby(tag, 0)),
        "decr": error_of(lambda: r.decr(tag)),  # DECRBY tag 1
        "incr_by_minus_1": error_of(lambda: r.incrby(tag, -1)),
        "incr_by_10001": error_of(lambda: r.incrby(tag, 10001)),
        "incrbyfloat": error_of(lambda: r.incrbyfloat(tag, 1.5)),
        "get": error_of(lambda: r.get(tag)),
        "set": error_of(lambda: r.set(tag, 5)),
    }
    # A command refused while queueing aborts the transaction: its INCR never runs.
    aborted = r.pipeline()
    aborted.incr(tag).execute_command("NOPE")
    errors["exec_abort"] = error_of(aborted.execute)
    striped = redis.Redis(host="127.0.0.1", port=striped_port, socket_timeout=10)
    errors["striped_incr_by_5"] = error_of(lambda: striped.incr(tag, 5))
    results["after"] = r.incr(tag)
    print(json.dumps({"results": results, "errors": errors}))


if __name__ == "__main__":
    main()
