// Package idforge is the Go client of idforge, the distributed unique-ID server: IDs
// from a list of servers with failover and back-off, a local buffer per kind and tag
// refilled in the background, and Snowflake decoding without a server.
//
//	ids, err := idforge.New([]string{"http://10.0.0.1:8080", "redis://10.0.0.2:6380"})
//	if err != nil { ... }          // a bad URL or option
//	defer ids.Close()
//	order, err := ids.Segment(ctx, "order") // 1001
//	event, err := ids.Snowflake(ctx)        // 910499571847892992
//	p, err := idforge.Parse(event, "twitter")
//	fmt.Println(p.JSON()) // {"id":"910499571847892992","layout":"twitter",...}
//
// The behaviour (servers, failover, the buffer, errors) is docs/clients.md of the
// idforge repository; this package follows it as the Python and JavaScript clients do.
// Standard library only.
package idforge
