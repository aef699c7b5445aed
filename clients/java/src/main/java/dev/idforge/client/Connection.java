package dev.idforge.client;

import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;

/**
 * One TCP connection to a server with a read buffer. Every operation takes the request's
 * deadline (Clock.now() nanos): the connect, each read and so the whole answer end by
 * then with a SocketTimeoutException. Requests are a few hundred bytes, so a write never
 * waits for the server to read.
 */
final class Connection {
  static final int MAX_LINE = 64 * 1024;
  static final int MAX_BODY = 16 * 1024 * 1024;

  private final Socket socket;
  private final InputStream in;
  private final OutputStream out;
  byte[] buf = new byte[16 * 1024];
  int start;
  int end;
  /** Has answered a request before: it was kept alive. */
  boolean used;
  /** Bytes of the current answer arrived. */
  boolean gotBytes;
  /** False once the server said it closes the connection after this answer. */
  boolean reusable = true;

  private Connection(Socket socket) throws IOException {
    this.socket = socket;
    this.in = socket.getInputStream();
    this.out = socket.getOutputStream();
  }

  static Connection open(String host, int port, long deadline) throws IOException {
    int left = millisLeft(deadline);
    Socket s = new Socket();
    try {
      s.setTcpNoDelay(true);
      s.connect(new InetSocketAddress(host, port), left);
      return new Connection(s);
    } catch (IOException | RuntimeException e) {
      s.close();
      throw e;
    }
  }

  /** Whole ms before the deadline, at least 1; SocketTimeoutException once it passed. */
  static int millisLeft(long deadline) throws SocketTimeoutException {
    long left = deadline - Clock.now();
    if (left <= 0) throw new SocketTimeoutException("deadline passed");
    return (int) Math.min(Integer.MAX_VALUE, Math.max(1, (left + 999_999) / 1_000_000));
  }

  void close() {
    try {
      socket.close();
    } catch (IOException ignored) {
      // closing: nothing to do
    }
  }

  void send(byte[] data, long deadline) throws IOException {
    millisLeft(deadline);
    out.write(data);
    out.flush();
  }

  /** Reads more bytes into the buffer (at least one), growing it up to MAX_BODY. */
  private void fill(long deadline) throws IOException, ServerFailure {
    if (end == buf.length) {
      if (start > 0) {
        System.arraycopy(buf, start, buf, 0, end - start);
        end -= start;
        start = 0;
      } else {
        if (buf.length >= MAX_BODY) throw new ServerFailure("the answer is too large");
        byte[] bigger = new byte[Math.min(MAX_BODY, buf.length * 2)];
        System.arraycopy(buf, 0, bigger, 0, end);
        buf = bigger;
      }
    }
    socket.setSoTimeout(millisLeft(deadline));
    int n = in.read(buf, end, buf.length - end);
    if (n < 0) throw new EOFException("the server closed the connection");
    gotBytes = true;
    end += n;
  }

  /**
   * The index of the '\r' ending the next line (CRLF) in {@code buf}; the line starts at
   * {@code start}. The caller consumes it with {@link #consumeLine}.
   */
  int lineEnd(long deadline) throws IOException, ServerFailure {
    int scan = start;
    while (true) {
      for (int i = scan; i + 1 < end; i++) {
        if (buf[i] == '\r' && buf[i + 1] == '\n') return i;
      }
      if (end - start > MAX_LINE) throw new ServerFailure("an answer line is too long");
      int from = end - start; // offsets survive a compaction in fill()
      fill(deadline);
      scan = Math.max(start, start + from - 1);
    }
  }

  void consumeLine(int lineEnd) {
    start = lineEnd + 2;
  }

  /** The next line as text (Latin-1: any byte is a char), consumed. */
  String readLine(long deadline) throws IOException, ServerFailure {
    int e = lineEnd(deadline);
    String line = new String(buf, start, e - start, StandardCharsets.ISO_8859_1);
    consumeLine(e);
    return line;
  }

  /** Makes sure {@code n} bytes are buffered from {@code start}. */
  void need(int n, long deadline) throws IOException, ServerFailure {
    if (n > MAX_BODY) throw new ServerFailure("the answer is too large");
    while (end - start < n) fill(deadline);
  }

  /** Everything up to the server's close (an HTTP answer without a length). */
  int readToEof(long deadline) throws IOException, ServerFailure {
    try {
      while (true) fill(deadline);
    } catch (EOFException e) {
      return end - start;
    }
  }

  boolean hasBufferedBytes() {
    return end > start;
  }
}
