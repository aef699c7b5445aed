package dev.idforge.client;

/** The kinds of ID a client fetches, with their HTTP route and Redis command. */
public enum Kind {
  SNOWFLAKE("snowflake", "/v1/snowflake", "ID.SNOWFLAKE", true),
  /** Segment IDs of a tag: {@link Client#segment(String)}. */
  SEGMENT("segment", "/v1/segment/", "ID.NEXT", true),
  UUID7("uuid7", "/v1/uuid7", "ID.UUID7", false),
  ULID("ulid", "/v1/ulid", "ID.ULID", false);

  final String label;
  final String path;
  final String command;
  /** IDs that are 64-bit numbers (else text). */
  final boolean numeric;

  Kind(String label, String path, String command, boolean numeric) {
    this.label = label;
    this.path = path;
    this.command = command;
    this.numeric = numeric;
  }

  /** The name docs/clients.md and the other clients use: snowflake, segment, uuid7, ulid. */
  @Override
  public String toString() {
    return label;
  }

  /** True for the kinds whose IDs carry their time (all but segment IDs). */
  public boolean timeOrdered() {
    return this != SEGMENT;
  }
}
