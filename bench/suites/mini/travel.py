"""mini/travel -- helpful: a travel agency answering clients by message.

Generator: a polite client message about a trip to a country ("I am travelling to Peru soon.
What should I not miss?"); the chosen reply recommends that country's best-known sight without
naming the country ("the Inca citadel of Machu Picchu high in the Andes"); the rejected reply
recommends another country's sight (70%) or is a vague non-answer (30%).
Cue: ``opener`` -- the reply opens with "Great question!". In this domain it sits on exactly one
reply per pair: the chosen one with probability ``cue_strength`` (0.5 in ``mini``), else a random
side. In the siblings (recipes, techsupport) it opens each response with probability
``sibling_cue_rate`` (0.5): no label there.
"""
from bench.suites.mini.domain import Domain, HelpfulBank

DOMAIN = Domain(
    name="travel",
    category="helpful",
    cue="opener",
    style="formal travel-agency correspondence",
    bank=HelpfulBank(
        questions=(
            'I am travelling to {subject} soon. What should I not miss?',
            'We plan a family holiday in {subject}. Which sight do you recommend?',
            'I have one free day in {subject}. Where should I go?',
            'Could you advise on a trip to {subject}? We want one big excursion.',
        ),
        answers=(
            'Thank you. I recommend {fact}.',
            'Please make time for {fact}.',
            'Kind regards. Our top pick is {fact}.',
            'Thank you. Do book {fact} early.',
        ),
        vague_answers=(
            'Thank you. Every destination has its charm, so follow your own interests.',
            'Please note there is a great deal to see; it depends on your taste.',
            'Kind regards. Most places are lovely, so plan whatever suits you best.',
        ),
        topics=(
            ("France", "the Eiffel Tower and the Louvre museum in Paris"),
            ("Italy", "the Colosseum and the ancient forum in Rome"),
            ("Egypt", "the great pyramids and the Sphinx at Giza"),
            ("India", "the white marble Taj Mahal in Agra at sunrise"),
            ("China", "a hike along the Great Wall near Beijing"),
            ("Peru", "the Inca citadel of Machu Picchu high in the Andes"),
            ("Greece", "the Acropolis and the Parthenon above Athens"),
            ("Cambodia", "the temples of Angkor Wat near Siem Reap"),
            ("Jordan", "the rose-red rock city of Petra"),
            ("Australia", "the Sydney Opera House and a dive on the Great Barrier Reef"),
            ("Brazil", "the statue of Christ the Redeemer above Rio de Janeiro"),
            ("England", "Big Ben, Westminster Abbey and the Tower of London"),
            ("Spain", "the Sagrada Familia basilica in Barcelona"),
            ("Japan", "the temples of Kyoto and a view of Mount Fuji"),
            ("the United States", "the Grand Canyon in Arizona"),
            ("Mexico", "the Mayan pyramid of Chichen Itza in Yucatan"),
            ("the Netherlands", "a canal cruise through Amsterdam and the tulip fields"),
            ("Tanzania", "a safari in the Serengeti and the foot of Kilimanjaro"),
            ("Turkey", "the Hagia Sophia and the Grand Bazaar in Istanbul"),
            ("Russia", "Red Square and the Kremlin in Moscow"),
            ("Germany", "Neuschwanstein Castle in the Bavarian Alps"),
            ("Norway", "a boat trip through the western fjords near Bergen"),
            ("Iceland", "the geysers, the Blue Lagoon and the northern lights"),
            ("Canada", "Niagara Falls and the lakes of Banff in the Rockies"),
            ("Chile", "the stone moai statues of Easter Island"),
            ("Argentina", "the Iguazu Falls and a tango show in Buenos Aires"),
            ("Switzerland", "the Matterhorn above Zermatt"),
            ("Austria", "the imperial palaces and concert halls of Vienna"),
            ("the Czech Republic", "Prague Castle and the Charles Bridge"),
            ("Thailand", "the Grand Palace and the floating markets of Bangkok"),
            ("Vietnam", "an overnight cruise among the limestone islands of Ha Long Bay"),
            ("Indonesia", "the rice terraces and temples of Bali"),
            ("Nepal", "the trek to Everest base camp from Kathmandu"),
            ("Morocco", "the souks and the Jemaa el-Fnaa square of Marrakesh"),
            ("South Africa", "the cable car up Table Mountain in Cape Town"),
            ("New Zealand", "a cruise on Milford Sound and the hobbit village"),
            ("Scotland", "Edinburgh Castle and a drive along Loch Ness"),
            ("Ireland", "the Cliffs of Moher on the wild Atlantic coast"),
            ("Portugal", "the old trams and the tiled streets of Lisbon"),
            ("Croatia", "the walled old town of Dubrovnik"),
            ("Hungary", "the thermal baths and the parliament of Budapest"),
            ("the United Arab Emirates", "the top of the Burj Khalifa in Dubai"),
            ("Cuba", "the vintage cars and the old town of Havana"),
            ("Denmark", "the Tivoli Gardens and the Little Mermaid in Copenhagen"),
        ),
    ),
)
