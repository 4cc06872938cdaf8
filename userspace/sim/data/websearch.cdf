# WebSearch flow-size distribution (bytes, cumulative percent), from the DCTCP
# paper (Alizadeh et al., SIGCOMM 2010), in the form used by the HPCC ns-3
# simulator: alibaba-edu/High-Precision-Congestion-Control,
# traffic_gen/WebSearch_distribution.txt. Piecewise-linear between points.
0 0
10000 15
20000 20
30000 30
50000 40
80000 53
200000 60
1000000 70
2000000 80
5000000 90
10000000 97
30000000 100
