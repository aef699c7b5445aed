# frozen_string_literal: true

# Runs every test file: ruby -Ilib test/run.rb [-v] [-n /pattern/] (check.sh runs it).
$LOAD_PATH.unshift(File.expand_path("../lib", __dir__))
Dir[File.join(__dir__, "test_*.rb")].sort.each { |f| require f }
