package limits

// SolvedGreetingsPerMin is the bound on the greeted allowances that solved
// challenges pay for (ADR 0059, addendum "What a solver farm buys"), in
// allowances a minute, all strangers together: as many allowances of
// allowance DHT requests each as make up strangerDHTPerMin requests (the
// strangers' shared budget of one DHT, limits.stranger_dht_per_min),
// rounded down, at least one; 0 (unlimited) when that budget is unlimited
// (0), for then the budget pays for every allowance. An allowance below 1
// counts as 1.
//
// The bucket of this rate (NewRate: a burst of a quarter of it, at least
// one) caps what Sybils that solve every challenge buy through their
// hellos at strangerDHTPerMin requests a minute, beside the
// strangerDHTPerMin they share without solving: twice the strangers'
// budget, where ADR 0014's ceiling of solved requests (1,200 a minute)
// alone let 64 × 1,200 = 76,800 more through. A solved hello past it is
// served, as every solved request is (that one request, ADR 0014), with
// no allowance.
//
// Defaults: 12,000 / 64 = 187 a minute (a burst of 46, one every
// 320.86 ms); the server profile's 6,000: 93 (a burst of 23).
func SolvedGreetingsPerMin(strangerDHTPerMin, allowance int) int {
	if strangerDHTPerMin <= 0 {
		return 0
	}
	return max(1, strangerDHTPerMin/max(allowance, 1))
}
