<?php
// phpredis (Debian's php-redis) against idforge: the forms an application uses for an
// increment, then what idforge refuses. Prints one JSON object for check.py.
//
// Usage: php phpredis_client.php PORT STRIPED_PORT TAG
[$port, $stripedPort, $tag] = [(int) $argv[1], (int) $argv[2], $argv[3]];

// phpredis answers false to a command the server refused and keeps the error's text.
function error_of(Redis $r, callable $call): ?string {
    $r->clearLastError();
    $call();
    return $r->getLastError();
}

$r = new Redis();
$r->connect('127.0.0.1', $port, 10);
$results = [];
$results['incr'] = $r->incr($tag);
$results['incr_by_5'] = $r->incrBy($tag, 5);
$results['transaction'] = $r->multi()->incr($tag)->incrBy($tag, 3)->incr($tag)->exec();
$results['pipeline'] = $r->pipeline()->incr($tag)->incrBy($tag, 2)->exec();
$striped = new Redis();
$striped->connect('127.0.0.1', $stripedPort, 10);
$errors = [
    'incr_by_0' => error_of($r, fn() => $r->incrBy($tag, 0)),
    'decr' => error_of($r, fn() => $r->decr($tag)),
    'striped_incr_by_5' => error_of($striped, fn() => $striped->incrBy($tag, 5)),
];
$results['after'] = $r->incr($tag);
echo json_encode(['results' => $results, 'errors' => $errors]), "\n";
