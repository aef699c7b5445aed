# redis-rb (Debian's ruby-redis) against idforge: the forms an application uses for an
# increment, then what idforge refuses. Prints one JSON object for check.py.
#
# Usage: ruby redis_rb_client.rb PORT STRIPED_PORT TAG
require 'json'
require 'redis'

port, striped_port, tag = ARGV[0].to_i, ARGV[1].to_i, ARGV[2]

def error_of
  yield
  nil
rescue Redis::CommandError => e
  e.message
end

r = Redis.new(host: '127.0.0.1', port: port, timeout: 10)
results = {}
results['incr'] = r.incr(tag)
results['incr_by_5'] = r.incrby(tag, 5)
results['transaction'] = r.multi do |m|
  m.incr(tag)
  m.incrby(tag, 3)
  m.incr(tag)
end
results['pipeline'] = r.pipelined do |p|
  p.incr(tag)
  p.incrby(tag, 2)
end
striped = Redis.new(host: '127.0.0.1', port: striped_port, timeout: 10)
errors = {
  'incr_by_0' => error_of { r.incrby(tag, 0) },
  'decr' => error_of { r.decr(tag) },
  'striped_incr_by_5' => error_of { striped.incrby(tag, 5) }
}
results['after'] = r.incr(tag)
puts JSON.generate({ 'results' => results, 'errors' => errors })
