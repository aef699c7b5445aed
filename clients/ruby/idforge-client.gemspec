# frozen_string_literal: true

require_relative "lib/idforge/version"

Gem::Specification.new do |spec|
  spec.name = "idforge-client"
  spec.version = Idforge::VERSION
  spec.summary = "Client of the idforge ID server: failover over a list of servers, a local buffer, " \
                 "Snowflake decoding"
  spec.description = "Takes Snowflake, segment, UUIDv7 and ULID IDs from idforge servers (HTTP JSON API " \
                     "and the Redis protocol) with failover, back-off and a buffer refilled in the " \
                     "background; decodes Snowflake IDs as `idforge parse --json` does. Standard library only."
  spec.authors = ["idforge"]
  spec.files = Dir.glob("{lib,bin}/**/*", base: __dir__).select { |f| File.file?(File.join(__dir__, f)) } +
               ["README.md"]
  spec.require_paths = ["lib"]
  spec.bindir = "bin"
  spec.executables = ["idforge-parse"]
  spec.required_ruby_version = ">= 3.0"
  spec.metadata["rubygems_mfa_required"] = "true"
end
