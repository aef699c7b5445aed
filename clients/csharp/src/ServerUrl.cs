// A server of the list: http://HOST:PORT or redis://HOST:PORT, with the default ports of
// docs/clients.md.
using System;
using System.Globalization;
using System.Net;
using System.Net.Sockets;

namespace Idforge.Client
{
    /// <summary><c>http://HOST:PORT</c> or <c>redis://HOST:PORT</c>.</summary>
    internal sealed class ServerUrl
    {
        public string Scheme;
        public string Host;
        public int Port;
        public string Url;
        public string HostHeader;

        public bool IsHttp => Scheme == "http";

        public static ServerUrl Parse(string url)
        {
            if (url == null) throw new ArgumentNullException(nameof(url), "a server is a URL string");
            string text = url.Trim();
            int sep = text.IndexOf("://", StringComparison.Ordinal);
            string scheme = sep < 0 ? "" : text.Substring(0, sep).ToLowerInvariant();
            if (scheme != "http" && scheme != "redis")
                throw new ArgumentException("server '" + url + "': the scheme must be http:// (the JSON API) or redis:// (the Redis protocol)");
            string rest = text.Substring(sep + 3);
            if (rest.EndsWith("/", StringComparison.Ordinal)) rest = rest.Substring(0, rest.Length - 1);
            if (rest.IndexOfAny(new[] { '/', '?', '#' }) >= 0)
                throw new ArgumentException("server '" + url + "': give only " + scheme + "://HOST:PORT (no path)");
            if (rest.IndexOf('@') >= 0)
                throw new ArgumentException("server '" + url + "': idforge servers take no user or password");
            string host, portText = null;
            if (rest.StartsWith("[", StringComparison.Ordinal))
            {
                int close = rest.IndexOf(']');
                if (close < 0) throw new ArgumentException("server '" + url + "': an IPv6 address without ']'");
                host = rest.Substring(1, close - 1);
                string after = rest.Substring(close + 1);
                if (after.Length > 0)
                {
                    if (after[0] != ':') throw new ArgumentException("server '" + url + "': text after the IPv6 address");
                    portText = after.Substring(1);
                }
                IPAddress ip;
                if (!IPAddress.TryParse(host, out ip) || ip.AddressFamily != AddressFamily.InterNetworkV6)
                    throw new ArgumentException("server '" + url + "': '" + host + "' is not an IPv6 address");
            }
            else
            {
                int colon = rest.LastIndexOf(':');
                if (colon >= 0)
                {
                    if (rest.IndexOf(':') != colon)
                        throw new ArgumentException("server '" + url + "': write an IPv6 address as [ADDRESS]");
                    host = rest.Substring(0, colon);
                    portText = rest.Substring(colon + 1);
                }
                else host = rest;
            }
            if (host.Length == 0) throw new ArgumentException("server '" + url + "' has no host");
            int port = scheme == "http" ? 80 : 6380; // the URL's default; idforge's RESP port
            if (portText != null)
            {
                if (portText.Length == 0 || portText.Length > 5 ||
                    !int.TryParse(portText, NumberStyles.None, CultureInfo.InvariantCulture, out port) || port < 1 || port > 65535)
                    throw new ArgumentException("server '" + url + "': port '" + portText + "' is not 1..65535");
            }
            string hostPart = host.IndexOf(':') >= 0 ? "[" + host + "]" : host;
            return new ServerUrl
            {
                Scheme = scheme,
                Host = host,
                Port = port,
                Url = scheme + "://" + hostPart + ":" + port.ToString(CultureInfo.InvariantCulture),
                HostHeader = hostPart + ":" + port.ToString(CultureInfo.InvariantCulture),
            };
        }
    }
}
