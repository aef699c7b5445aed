# frozen_string_literal: true

module Idforge
  VERSION = "0.1.0"
end
