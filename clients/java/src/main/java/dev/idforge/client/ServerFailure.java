package dev.idforge.client;

/** A server did not answer usefully: the request moves on to the next server. */
final class ServerFailure extends Exception {
  private static final long serialVersionUID = 1L;

  final String reason;

  ServerFailure(String reason) {
    super(reason, null, false, false);
    this.reason = reason;
  }
}
